package isolation

import (
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

// pair is a source and destination address that may connect.
type pair struct{ From, To netip.Addr }

// contents is what the two sets hold: every member's address, and the
// pairs that may connect. Pairs from an address to itself are left out
// (that traffic never leaves the replica).
type contents struct {
	addrs map[netip.Addr]bool
	pairs map[pair]bool
}

// contentsOf is what sync writes to the kernel for members.
func contentsOf(members []Member) *contents {
	c := &contents{addrs: map[netip.Addr]bool{}, pairs: map[pair]bool{}}
	for _, from := range members {
		if !from.Addr.Is4() {
			continue
		}
		c.addrs[from.Addr] = true
		for _, to := range members {
			if to.Addr.Is4() && from.Addr != to.Addr && mayReach(from, to) {
				c.pairs[pair{from.Addr, to.Addr}] = true
			}
		}
	}
	return c
}
