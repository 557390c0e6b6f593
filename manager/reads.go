package manager

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// readBarrierLimit bounds how long a linearizable read waits for a quorum
// to confirm this member's view: a member cut off from the majority
// answers no_leader then, instead of hanging a client without a deadline.
const readBarrierLimit = 5 * time.Second

// consistencyOf is the consistency a read asks for (LOCAL when unset).
func consistencyOf(req any) api.ReadConsistency {
	if r, ok := req.(interface{ GetConsistency() api.ReadConsistency }); ok {
		return r.GetConsistency()
	}
	return api.ReadConsistency_READ_CONSISTENCY_LOCAL
}

// LocalRead decides when a read marked local_read is answered from this
// member's store (docs/design.md §7). Never before the store holds
// everything its log held as committed when it opened: a restarted
// manager would answer with an older state than it served before it
// stopped, so it answers not_ready, which clients retry. A linearizable
// read also waits until the store holds every write a quorum had
// committed when the read began (raft's ReadIndex): a manager that was
// deposed without knowing it cannot serve it stale data.
func (m *Manager) LocalRead(ctx context.Context, req any) error {
	if applied, commit, ok := m.raft.Replayed(); !ok {
		return reason.Error(codes.Unavailable, reason.NotReady,
			"this manager restarted and is still applying its raft log (entry %d of %d): retry in a moment", applied, commit)
	}
	if consistencyOf(req) != api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE {
		return nil
	}
	bctx, cancel := context.WithTimeout(ctx, readBarrierLimit)
	defer cancel()
	err := m.raft.ReadBarrier(bctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err() // the caller gave up: gRPC answers with its own status
	case errors.Is(err, context.DeadlineExceeded) && m.QuorumLost():
		return reason.Error(codes.Unavailable, reason.QuorumLost,
			"a linearizable read needs a majority of the managers, and this one has had no leader for %s", m.raft.LeaderlessFor().Round(time.Second))
	}
	return reason.Error(codes.Unavailable, reason.NoLeader,
		"no majority confirmed within %s that this manager's data is current (a linearizable read): %v", readBarrierLimit, err)
}
