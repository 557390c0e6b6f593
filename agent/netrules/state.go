package netrules

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// VIP is a service's virtual IP on one network and the addresses of its
// running replicas there. With no backends, connections to it are
// refused.
type VIP struct {
	Addr     netip.Addr
	Backends []netip.Addr
}

// State is what a node wants its overlay rules to say.
type State struct {
	// Networks are the subnets of the overlay networks this node knows.
	// A packet forwarded to an address in one of them must come from the
	// same one.
	Networks []netip.Prefix
	VIPs     []VIP
	// Gateways are the node's own addresses on its networks (one per
	// network at most; netview.Gateways). A process of the node that
	// reaches a VIP gets its connection's source rewritten to its gateway
	// on the VIP's network, so that the backend's node lets it in.
	Gateways []netip.Addr
	// Ingress is the routing mesh's published ports; nil publishes none.
	Ingress *Ingress
}

// normalize checks s and returns it in canonical form: prefixes masked,
// sorted and deduplicated, VIPs sorted by address, backends sorted and
// deduplicated. Two states that normalize equal load the same rules.
func normalize(s State) (State, error) {
	var out State
	for _, p := range s.Networks {
		if !p.IsValid() || !p.Addr().Is4() {
			return State{}, fmt.Errorf("network %s: not an IPv4 prefix", p)
		}
		out.Networks = append(out.Networks, p.Masked())
	}
	slices.SortFunc(out.Networks, comparePrefix)
	out.Networks = slices.Compact(out.Networks)
	for i := 1; i < len(out.Networks); i++ {
		if a, b := out.Networks[i-1], out.Networks[i]; a.Overlaps(b) {
			// The "same" set cannot hold overlapping ranges, and the
			// separation would be ambiguous: which network is an address in?
			return State{}, fmt.Errorf("networks %s and %s overlap", a, b)
		}
	}
	seen := map[netip.Addr]bool{}
	for _, v := range s.VIPs {
		if !v.Addr.Is4() {
			return State{}, fmt.Errorf("vip %s: not an IPv4 address", v.Addr)
		}
		if seen[v.Addr] {
			return State{}, fmt.Errorf("vip %s: given twice", v.Addr)
		}
		seen[v.Addr] = true
		n := VIP{Addr: v.Addr}
		for _, b := range v.Backends {
			if !b.Is4() {
				return State{}, fmt.Errorf("vip %s: backend %s: not an IPv4 address", v.Addr, b)
			}
			n.Backends = append(n.Backends, b)
		}
		slices.SortFunc(n.Backends, netip.Addr.Compare)
		n.Backends = slices.Compact(n.Backends)
		out.VIPs = append(out.VIPs, n)
	}
	slices.SortFunc(out.VIPs, func(a, b VIP) int { return a.Addr.Compare(b.Addr) })
	out.Gateways = slices.Clone(s.Gateways)
	slices.SortFunc(out.Gateways, netip.Addr.Compare)
	out.Gateways = slices.Compact(out.Gateways)
	onNetwork := map[netip.Prefix]netip.Addr{}
	for _, g := range out.Gateways {
		i := slices.IndexFunc(out.Networks, func(p netip.Prefix) bool { return p.Contains(g) })
		if i < 0 {
			return State{}, fmt.Errorf("gateway %s: in no network", g)
		}
		if other, ok := onNetwork[out.Networks[i]]; ok {
			return State{}, fmt.Errorf("gateways %s and %s: both on network %s", other, g, out.Networks[i])
		}
		onNetwork[out.Networks[i]] = g
	}
	in, err := normalizeIngress(s.Ingress, out.Networks)
	if err != nil {
		return State{}, err
	}
	out.Ingress = in
	return out, nil
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}

// equal reports whether two normalized states are the same.
func equal(a, b State) bool {
	return slices.Equal(a.Networks, b.Networks) && slices.Equal(a.Gateways, b.Gateways) &&
		equalIngress(a.Ingress, b.Ingress) &&
		slices.EqualFunc(a.VIPs, b.VIPs, func(x, y VIP) bool {
			return x.Addr == y.Addr && slices.Equal(x.Backends, y.Backends)
		})
}
