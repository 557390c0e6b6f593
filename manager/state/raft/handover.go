package raft

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// HandOver gives leadership away before this member stops: to the voter
// the leader has heard from lately that holds the most of the log (the
// lower raft id on a tie). Writes then pause for a transfer, about a round
// trip, rather than for the followers to find the leader gone; and the
// dispatcher's sessions move to the new leader instead of holding this
// member's servers open while they stop. It does nothing when this member
// does not lead or no other voter is active, and returns ctx's error if
// the transfer has not taken by then (the caller stops anyway).
func (n *Node) HandOver(ctx context.Context) (to uint64, err error) {
	if !n.IsLeader() {
		return 0, nil
	}
	st := n.Status()
	var best uint64
	for _, id := range slices.Sorted(maps.Keys(st.Config.Voters.IDs())) {
		pr, ok := st.Progress[id]
		if id == n.raftID || !ok || !pr.RecentActive {
			continue
		}
		if to == 0 || pr.Match > best {
			to, best = id, pr.Match
		}
	}
	if to == 0 {
		return 0, nil
	}
	if err := n.TransferLeadership(ctx, to); err != nil {
		return to, fmt.Errorf("hand leadership over before stopping: %w", err)
	}
	return to, nil
}
