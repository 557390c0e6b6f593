package api

// MemberAddrs are the addresses of members, in their order: the managers
// a node records (managers.json) and dials, for the manager, the role
// loop and formation alike.
func MemberAddrs(members []*RaftMember) []string {
	addrs := make([]string, 0, len(members))
	for _, mem := range members {
		addrs = append(addrs, mem.Address)
	}
	return addrs
}
