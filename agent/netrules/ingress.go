package netrules

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// IngressCtMark is the conntrack mark bit the ingress DNAT sets on the
// connections it makes. It lets them past the separation into the
// ingress subnet (and them only: a VIP's DNAT does not set it) and gets
// them SNATed to the node's gateway there. Other bits of the mark are
// left as they are.
const IngressCtMark = 0x10000000

// Ingress is the routing mesh on this node: every port in Ports is
// published on every local address of the node and spread over its
// backends on the ingress network.
type Ingress struct {
	// Subnet is the ingress network's; it must be one of
	// State.Networks.
	Subnet netip.Prefix
	// Gateway is the node's own address in its block of the ingress
	// network: connections the mesh makes leave with it as source, so
	// answers come back through this node. Without it (the node holds no
	// block yet) every port refuses.
	Gateway netip.Addr
	Ports   []Published
}

// Published is one port the mesh publishes.
type Published struct {
	// Proto is "tcp" or "udp" ("" is tcp).
	Proto string
	// Port is the published port, Target the backends' port.
	Port, Target uint16
	// Backends are replicas' addresses on the ingress network. With none,
	// connections to the port are refused.
	Backends []netip.Addr
}

// normalizeIngress checks in against the normalized networks and returns
// it in canonical form: ports sorted by protocol and port, backends
// sorted and deduplicated.
func normalizeIngress(in *Ingress, networks []netip.Prefix) (*Ingress, error) {
	if in == nil {
		return nil, nil
	}
	if !in.Subnet.IsValid() || !in.Subnet.Addr().Is4() {
		return nil, fmt.Errorf("ingress subnet %s: not an IPv4 prefix", in.Subnet)
	}
	out := &Ingress{Subnet: in.Subnet.Masked(), Gateway: in.Gateway}
	if !slices.Contains(networks, out.Subnet) {
		// The separation must cover it, or the outside reaches the
		// backends directly.
		return nil, fmt.Errorf("ingress subnet %s: not one of the networks", out.Subnet)
	}
	if out.Gateway.IsValid() && !out.Subnet.Contains(out.Gateway) {
		return nil, fmt.Errorf("ingress gateway %s: not in %s", out.Gateway, out.Subnet)
	}
	for _, p := range in.Ports {
		n := Published{Proto: strings.ToLower(cmp.Or(p.Proto, "tcp")), Port: p.Port, Target: p.Target}
		if n.Proto != "tcp" && n.Proto != "udp" {
			return nil, fmt.Errorf("ingress port %s/%d: protocol not tcp or udp", p.Proto, p.Port)
		}
		if n.Port == 0 || n.Target == 0 {
			return nil, fmt.Errorf("ingress port %s/%d: port or target 0", n.Proto, n.Port)
		}
		for _, b := range p.Backends {
			if !out.Subnet.Contains(b) {
				return nil, fmt.Errorf("ingress port %s/%d: backend %s: not in %s", n.Proto, n.Port, b, out.Subnet)
			}
			n.Backends = append(n.Backends, b)
		}
		slices.SortFunc(n.Backends, netip.Addr.Compare)
		n.Backends = slices.Compact(n.Backends)
		out.Ports = append(out.Ports, n)
	}
	slices.SortFunc(out.Ports, comparePublished)
	for i := 1; i < len(out.Ports); i++ {
		if comparePublished(out.Ports[i-1], out.Ports[i]) == 0 {
			return nil, fmt.Errorf("ingress port %s/%d: given twice", out.Ports[i].Proto, out.Ports[i].Port)
		}
	}
	return out, nil
}

func comparePublished(a, b Published) int {
	return cmp.Or(strings.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
}

// equalIngress reports whether two normalized ingresses are the same.
func equalIngress(a, b *Ingress) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Subnet == b.Subnet && a.Gateway == b.Gateway &&
		slices.EqualFunc(a.Ports, b.Ports, func(x, y Published) bool {
			return x.Proto == y.Proto && x.Port == y.Port && x.Target == y.Target && slices.Equal(x.Backends, y.Backends)
		})
}
