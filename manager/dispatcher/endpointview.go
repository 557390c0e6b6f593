package dispatcher

import (
	"slices"
	"strings"

	"github.com/jaco-project/jaco/api"
)

// versions are the networks node n holds a block of and the table knows,
// by id, with their versions: what a session compares with what it sent.
func (e *endpointTable) versions(n *api.Node) []netVersion {
	var out []netVersion
	for _, b := range n.GetOverlayBlocks() {
		id := b.GetNetworkId()
		if e.networks[id] == nil || slices.ContainsFunc(out, func(v netVersion) bool { return v.id == id }) {
			continue
		}
		out = append(out, netVersion{id: id, version: e.version[id]})
	}
	slices.SortFunc(out, func(a, b netVersion) int { return strings.Compare(a.id, b.id) })
	return out
}

// holds says whether node n holds a block of any of the networks ids.
func holds(n *api.Node, ids []string) bool {
	for _, b := range n.GetOverlayBlocks() {
		if slices.Contains(ids, b.GetNetworkId()) {
			return true
		}
	}
	return false
}

// view is the session message's networks and endpoints for the networks
// vs (from versions), in their order, each network's endpoints by service
// name. The messages are shared between sessions: nobody may change them.
func (e *endpointTable) view(vs []netVersion) ([]*api.Network, []*api.ServiceEndpoint) {
	var networks []*api.Network
	var endpoints []*api.ServiceEndpoint
	for _, v := range vs {
		n := e.networks[v.id]
		if n == nil {
			continue
		}
		networks = append(networks, n)
		endpoints = append(endpoints, e.endpointsOf(n)...)
	}
	return networks, endpoints
}

// endpointsOf builds network n's endpoints, once per version. The ingress
// network's carry each service's ingress ports instead of a VIP.
func (e *endpointTable) endpointsOf(n *api.Network) []*api.ServiceEndpoint {
	if b, ok := e.built[n.GetId()]; ok && b.version == e.version[n.GetId()] {
		return b.endpoints
	}
	var out []*api.ServiceEndpoint
	for sid := range e.byNetwork[n.GetSpec().GetName()] {
		s := e.services[sid]
		ep := &api.ServiceEndpoint{ServiceId: sid, ServiceName: s.GetSpec().GetName(), NetworkId: n.GetId(),
			Aliases: api.ServiceAliases(s.GetSpec())}
		if n.GetSpec().GetIngress() {
			// The mesh: every node publishes these ports over the
			// replicas' ingress addresses; no VIP (docs/adr/0026).
			ep.Ports = api.IngressPorts(s.GetSpec())
		} else if wantsVIP(s) {
			for _, v := range s.GetVirtualIps() {
				if v.GetNetworkId() == n.GetId() {
					ep.VirtualIp = v.GetAddress()
				}
			}
		}
		for _, tid := range sortedIDs(e.byService[sid]) {
			r := e.replicas[tid]
			if addr, ok := r.addrs[n.GetId()]; ok && e.up[r.nodeID] {
				ep.Replicas = append(ep.Replicas, &api.EndpointReplica{TaskId: tid, NodeId: r.nodeID, Address: addr})
			}
		}
		out = append(out, ep)
	}
	slices.SortFunc(out, byServiceName)
	e.built[n.GetId()] = builtEndpoints{version: e.version[n.GetId()], endpoints: out}
	return out
}

// wantsVIP: a service in DNSRR mode shows no VIP, even one not yet
// released by the leader's allocator.
func wantsVIP(s *api.Service) bool {
	return s.GetSpec().GetEndpointMode() != api.EndpointMode_ENDPOINT_MODE_DNSRR
}
