package rolemanager

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/raft/v3"

	"github.com/jaco-project/jaco/manager/voterset"
)

// RemoveMember takes raftID out of the raft group without the voters ever
// outnumbering what the remaining members can afford (cluster-lifecycle
// "Graceful remove"): the leaver is demoted first, then — one change at a
// time, lexicographically-last non-leader voter first, as Decide would —
// voters beyond voterset.TargetVoters of the members that stay, and only
// then is the leaver removed. It holds the tick lock throughout, so no
// promotion interleaves and brings the leaver back.
func (r *VoterReconciler) RemoveMember(ctx context.Context, raftID uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	self := r.raft.RaftID()
	if raftID == self {
		return voterset.ErrRemoveLeader
	}
	if r.raft.Status().Lead != self {
		return voterset.ErrNotLeading
	}
	names := map[uint64]string{}
	for _, m := range r.raft.Members() {
		names[m.RaftId] = m.NodeId
	}
	if _, ok := names[raftID]; !ok {
		return fmt.Errorf("%w: %x", voterset.ErrNoSuchMember, raftID)
	}
	target := voterset.TargetVoters(len(names) - 1)
	for {
		voters := r.raft.Status().Config.Voters.IDs()
		var next uint64
		if _, ok := voters[raftID]; ok {
			next = raftID // the leaver goes first: a nonvoter leaves safely
		} else if len(voters) > target {
			next = lastDemotable(voters, names, self)
		}
		if next == 0 {
			break
		}
		if err := r.raft.Demote(ctx, next); err != nil {
			return fmt.Errorf("demote %s (raft id %x) before removing %x: %w", names[next], next, raftID, err)
		}
		r.log.Info("demoted before a removal", "node_id", names[next], "leaving", names[raftID])
	}
	if err := r.raft.Remove(ctx, raftID); err != nil {
		return fmt.Errorf("remove %s (raft id %x): %w", names[raftID], raftID, err)
	}
	delete(r.seen, raftID)
	r.log.Info("removed from the raft group", "node_id", names[raftID])
	return nil
}

// HandOver moves leadership from this member, which is about to leave, to
// the most caught-up other voter. With no other voter (two managers: one
// voter), the most caught-up nonvoter is promoted first; the new leader's
// reconciler then demotes the leaver again, one voter for two members.
// It returns the raft id leadership went to.
func (r *VoterReconciler) HandOver(ctx context.Context) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	self := r.raft.RaftID()
	st := r.raft.Status()
	if st.Lead != self {
		return 0, voterset.ErrNotLeading
	}
	to, voter := mostCaughtUp(st, self)
	if to == 0 {
		return 0, voterset.ErrLastManager
	}
	if !voter {
		if err := r.raft.Promote(ctx, to); err != nil {
			return 0, fmt.Errorf("promote %x to hand leadership over: %w", to, err)
		}
	}
	if err := r.raft.TransferLeadership(ctx, to); err != nil {
		return 0, fmt.Errorf("transfer leadership to %x: %w", to, err)
	}
	r.log.Info("leadership handed over", "to", fmt.Sprintf("%x", to))
	return to, nil
}

// mostCaughtUp picks the member other than self with the highest match,
// preferring voters; ties go to the lower raft id.
func mostCaughtUp(st raft.Status, self uint64) (id uint64, voter bool) {
	var best uint64
	consider := func(ids map[uint64]struct{}, isVoter bool) {
		for _, cand := range slices.Sorted(maps.Keys(ids)) {
			pr, ok := st.Progress[cand]
			if cand == self || !ok {
				continue
			}
			if id == 0 || pr.Match > best {
				id, best, voter = cand, pr.Match, isVoter
			}
		}
	}
	consider(st.Config.Voters.IDs(), true)
	if id == 0 {
		consider(st.Config.Learners, false)
	}
	return id, voter
}

// lastDemotable is the voter Decide would demote: the lexicographically
// last by node id, never the leader; 0 when there is none.
func lastDemotable(voters map[uint64]struct{}, names map[uint64]string, leader uint64) uint64 {
	var ids []uint64
	for id := range voters {
		if id != leader {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	return slices.MaxFunc(ids, func(a, b uint64) int {
		return cmp.Or(cmp.Compare(names[a], names[b]), cmp.Compare(a, b))
	})
}
