package dispatcher

import (
	"fmt"
	"net/netip"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// checkAddresses checks a replica's reported addresses against its node:
// each must lie in the node's own block of that network, one per network.
// Another node's block, or a VIP, would let one node's report steer other
// nodes' traffic to an address it does not own.
func checkAddresses(n *api.Node, st *api.TaskStatus) error {
	seen := map[string]bool{}
	for _, a := range st.GetAddresses() {
		addr, err := netip.ParseAddr(a.GetAddress())
		if err != nil {
			return fmt.Errorf("network %s: address %q: %w", a.GetNetworkId(), a.GetAddress(), err)
		}
		if seen[a.GetNetworkId()] {
			return fmt.Errorf("network %s: more than one address", a.GetNetworkId())
		}
		seen[a.GetNetworkId()] = true
		if !inBlock(n, a.GetNetworkId(), addr) {
			return fmt.Errorf("network %s: %s is not in this node's block of the network", a.GetNetworkId(), addr)
		}
	}
	return nil
}

func inBlock(n *api.Node, networkID string, addr netip.Addr) bool {
	for _, b := range n.GetOverlayBlocks() {
		if b.GetNetworkId() != networkID {
			continue
		}
		p, err := netip.ParsePrefix(b.GetPrefix())
		return err == nil && p.Masked().Contains(addr)
	}
	return false
}

// withCheckedAddresses is st, or a copy without its addresses when they
// fail checkAddresses: the state still counts, but the replica stays out
// of service discovery.
func (s *Server) withCheckedAddresses(n *api.Node, taskID string, st *api.TaskStatus) *api.TaskStatus {
	if len(st.GetAddresses()) == 0 {
		return st
	}
	err := checkAddresses(n, st)
	if err == nil {
		return st
	}
	s.cfg.log.Warn("replica addresses refused; it stays out of service discovery",
		"node_id", n.GetId(), "task_id", taskID, "err", err)
	st = proto.CloneOf(st)
	st.Addresses = nil
	return st
}
