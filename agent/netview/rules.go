package netview

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/jaco-project/jaco/agent/netrules"
	"github.com/jaco-project/jaco/api"
)

// TableName is the node's nftables table of overlay rules (one per node:
// nodes may share a kernel).
func TableName(nodeID string) string { return "jaco-net-" + BridgeName(nodeID, "")[2:] }

// Backends says which replicas the rules spread connections over.
type Backends int

const (
	// AllReplicas: every running replica the view lists.
	AllReplicas Backends = iota
	// PreferLocal: this node's own replicas of a service when it has
	// any, else all. For a node cut off from the managers: its view goes
	// stale, and the other nodes' replicas it lists may be gone or out of
	// reach, while its own are known to it.
	PreferLocal
)

// Rules is the node's overlay rules: its networks kept apart, each
// service's VIP spread over the service's running replicas on that
// network, and the routing mesh's ports (from the ingress network's
// endpoints) spread over the replicas on the ingress network.
func Rules(v View, b Backends) netrules.State {
	var s netrules.State
	for _, n := range sortedNetworks(v) {
		if p, err := netip.ParsePrefix(n.GetSpec().GetSubnet()); err == nil {
			s.Networks = append(s.Networks, p.Masked())
		}
	}
	for _, e := range v.Endpoints {
		vip, err := netip.ParseAddr(e.GetVirtualIp())
		if err != nil {
			continue // DNSRR: no VIP
		}
		s.VIPs = append(s.VIPs, netrules.VIP{Addr: vip, Backends: backends(v, e, b)})
	}
	s.Gateways = Gateways(v)
	s.Ingress = ingress(v, b)
	return s
}

// ingress is the mesh's state: nil without an ingress network in the
// view. What netrules would refuse (and so refuse the whole state) is
// left out: a port that is not tcp or udp or is out of range, a port a
// second service publishes too, a backend or a block outside the subnet.
func ingress(v View, b Backends) *netrules.Ingress {
	i := slices.IndexFunc(v.Networks, func(n *api.Network) bool { return n.GetSpec().GetIngress() })
	if i < 0 {
		return nil
	}
	n := v.Networks[i]
	subnet, err := netip.ParsePrefix(n.GetSpec().GetSubnet())
	if err != nil {
		return nil
	}
	in := &netrules.Ingress{Subnet: subnet.Masked()}
	att, ok := Attachments(v, 0)[n.GetSpec().GetName()]
	if ok && att.NetworkID == n.GetId() && in.Subnet.Contains(att.Gateway) {
		in.Gateway = att.Gateway
	}
	eps := slices.Clone(v.Endpoints)
	// The first service by id keeps a port two claim, whichever order the
	// view lists them in.
	slices.SortFunc(eps, func(a, b *api.ServiceEndpoint) int { return strings.Compare(a.GetServiceId(), b.GetServiceId()) })
	type published struct {
		proto string
		port  uint32
	}
	taken := map[published]bool{}
	for _, e := range eps {
		if e.GetNetworkId() != n.GetId() {
			continue
		}
		var bs []netip.Addr
		for _, a := range backends(v, e, b) {
			if in.Subnet.Contains(a) {
				bs = append(bs, a)
			}
		}
		for _, p := range e.GetPorts() {
			proto := strings.ToLower(cmp.Or(p.GetProtocol(), "tcp"))
			pub, target := p.GetPublishedPort(), cmp.Or(p.GetTargetPort(), p.GetPublishedPort())
			if !api.PublishedIngress(p) || (proto != "tcp" && proto != "udp") || pub > 65535 || target > 65535 {
				continue
			}
			key := published{proto, pub}
			if taken[key] {
				continue
			}
			taken[key] = true
			in.Ports = append(in.Ports, netrules.Published{Proto: proto, Port: uint16(pub), Target: uint16(target),
				Backends: slices.Clone(bs)})
		}
	}
	return in
}

// backends are e's running replicas' addresses, this node's only under
// PreferLocal when it runs any.
func backends(v View, e *api.ServiceEndpoint, b Backends) []netip.Addr {
	var all, local []netip.Addr
	for _, rep := range e.GetReplicas() {
		a, err := netip.ParseAddr(rep.GetAddress())
		if err != nil {
			continue
		}
		all = append(all, a)
		if rep.GetNodeId() == v.Node.GetId() {
			local = append(local, a)
		}
	}
	if b == PreferLocal && len(local) > 0 {
		return local
	}
	return all
}
