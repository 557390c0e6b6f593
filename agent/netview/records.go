package netview

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/jaco-project/jaco/agent/dns"
	"github.com/jaco-project/jaco/api"
)

// Records are what the node's DNS server answers: every service on each
// of the view's networks but the ingress network with its VIP and
// running replicas, and this node's replicas as askers, each seeing all
// of its networks but that one.
func Records(v View) dns.Records {
	byNet := map[string][]*api.ServiceEndpoint{}
	for _, e := range v.Endpoints {
		byNet[e.GetNetworkId()] = append(byNet[e.GetNetworkId()], e)
	}
	var r dns.Records
	names := map[string]string{} // network id → name
	for _, n := range sortedNetworks(v) {
		if n.GetSpec().GetIngress() {
			// The mesh's: replicas reach services by their own networks,
			// and no name is served on it.
			continue
		}
		subnet, err := netip.ParsePrefix(n.GetSpec().GetSubnet())
		if err != nil {
			continue
		}
		names[n.GetId()] = n.GetSpec().GetName()
		net := dns.Network{Name: n.GetSpec().GetName(), Subnet: subnet.Masked()}
		eps := byNet[n.GetId()]
		slices.SortFunc(eps, func(a, b *api.ServiceEndpoint) int { return strings.Compare(a.GetServiceName(), b.GetServiceName()) })
		for _, e := range eps {
			s := dns.Service{Name: e.GetServiceName()}
			if vip, err := netip.ParseAddr(e.GetVirtualIp()); err == nil {
				s.VIP = vip
			}
			for _, rep := range e.GetReplicas() {
				if a, err := netip.ParseAddr(rep.GetAddress()); err == nil {
					s.Tasks = append(s.Tasks, a)
				}
			}
			net.Services = append(net.Services, s)
		}
		net.Services = append(net.Services, aliases(eps, net.Services)...)
		r.Networks = append(r.Networks, net)
	}
	r.Askers = askers(v, names)
	return r
}

// askers maps each address of this node's running replicas to all the
// networks that replica is on, so it sees them all whichever it asks
// through.
func askers(v View, names map[string]string) map[netip.Addr][]string {
	type local struct {
		addrs []netip.Addr
		nets  []string
	}
	byTask := map[string]*local{}
	for _, e := range v.Endpoints {
		name, ok := names[e.GetNetworkId()]
		if !ok {
			continue
		}
		for _, rep := range e.GetReplicas() {
			a, err := netip.ParseAddr(rep.GetAddress())
			if rep.GetNodeId() != v.Node.GetId() || err != nil {
				continue
			}
			l := byTask[rep.GetTaskId()]
			if l == nil {
				l = &local{}
				byTask[rep.GetTaskId()] = l
			}
			if !slices.Contains(l.addrs, a) {
				l.addrs = append(l.addrs, a)
			}
			if !slices.Contains(l.nets, name) {
				l.nets = append(l.nets, name)
			}
		}
	}
	out := map[netip.Addr][]string{}
	for _, l := range byTask {
		slices.Sort(l.nets)
		for _, a := range l.addrs {
			out[a] = l.nets
		}
	}
	return out
}

// aliases are the entries of the endpoints' aliases on one network (a
// stack service's short name), each answering as its service does. An
// alias that is a service's own name there, or that two services claim,
// answers nothing: which one was meant cannot be told.
func aliases(eps []*api.ServiceEndpoint, services []dns.Service) []dns.Service {
	byName := map[string]dns.Service{}
	for _, s := range services {
		byName[strings.ToLower(s.Name)] = s
	}
	claims := map[string][]dns.Service{}
	for _, e := range eps {
		for _, a := range e.GetAliases() {
			key := strings.ToLower(a)
			if _, taken := byName[key]; !taken {
				s := byName[strings.ToLower(e.GetServiceName())]
				s.Name = a
				claims[key] = append(claims[key], s)
			}
		}
	}
	var out []dns.Service
	for _, c := range claims {
		if len(c) == 1 {
			out = append(out, c[0])
		}
	}
	slices.SortFunc(out, func(a, b dns.Service) int { return strings.Compare(a.Name, b.Name) })
	return out
}
