package isolation

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/jaco-project/jaco/api"
)

// Member is one replica the ruleset knows: its address and what its spec
// says about who it reaches and who reaches it.
type Member struct {
	// ReplicaID is the task id.
	ReplicaID string
	Addr      netip.Addr
	Service   string
	// DependsOn are the services this replica may reach.
	DependsOn []string
	// Open lets every replica reach this one.
	Open bool
	// AllowFrom are more services whose replicas may reach this one.
	AllowFrom []string
}

// MemberOf describes a replica of service with spec at addr.
func MemberOf(replicaID string, addr netip.Addr, service string, spec *api.ServiceSpec) Member {
	return Member{
		ReplicaID: replicaID,
		Addr:      addr,
		Service:   service,
		DependsOn: slices.Clone(spec.GetDependsOn()),
		Open:      spec.GetNetwork().GetOpen(),
		AllowFrom: slices.Clone(spec.GetNetwork().GetAllowFrom()),
	}
}

// mayReach tells whether a replica like from may open a connection to a
// replica like to.
func mayReach(from, to Member) bool {
	return from.Service == to.Service ||
		to.Open ||
		slices.Contains(from.DependsOn, to.Service) ||
		slices.Contains(to.AllowFrom, from.Service)
}

// Pair is a source and destination address that may connect.
type Pair struct{ From, To netip.Addr }

// Policy is the content of the ruleset's sets for a set of members:
// every member's address, and the pairs that may connect, both sorted.
// Pairs from an address to itself are left out (that traffic never leaves
// the replica).
func Policy(members []Member) (addrs []netip.Addr, allowed []Pair) {
	c := contentsOf(members)
	addrs = slices.SortedFunc(maps.Keys(c.addrs), netip.Addr.Compare)
	allowed = slices.SortedFunc(maps.Keys(c.pairs), func(a, b Pair) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return a.To.Compare(b.To)
	})
	return addrs, allowed
}

// contents is what the two sets hold.
type contents struct {
	addrs map[netip.Addr]bool
	pairs map[Pair]bool
}

// contentsOf is Policy as sets: what sync writes to the kernel.
func contentsOf(members []Member) *contents {
	c := &contents{addrs: map[netip.Addr]bool{}, pairs: map[Pair]bool{}}
	for _, from := range members {
		if !from.Addr.Is4() {
			continue
		}
		c.addrs[from.Addr] = true
		for _, to := range members {
			if to.Addr.Is4() && from.Addr != to.Addr && mayReach(from, to) {
				c.pairs[Pair{from.Addr, to.Addr}] = true
			}
		}
	}
	return c
}
