package netview

import (
	"net/netip"

	"github.com/jaco-project/jaco/agent/netrules"
)

// TableName is the node's nftables table of overlay rules (one per node:
// nodes may share a kernel).
func TableName(nodeID string) string { return "jaco-net-" + BridgeName(nodeID, "")[2:] }

// Rules is the node's overlay rules: its networks kept apart, and each
// service's VIP spread over the service's running replicas on that
// network.
func Rules(v View) netrules.State {
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
		r := netrules.VIP{Addr: vip}
		for _, rep := range e.GetReplicas() {
			if a, err := netip.ParseAddr(rep.GetAddress()); err == nil {
				r.Backends = append(r.Backends, a)
			}
		}
		s.VIPs = append(s.VIPs, r)
	}
	s.Gateways = Gateways(v)
	return s
}
