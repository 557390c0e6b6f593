package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/voterset"
)

// RemoveNode takes node out of the cluster: a manager leaves raft first —
// by the voter-safe path of the role manager's RemoveMember, or, when it
// is this leader, by handing leadership over and letting the new leader
// finish — and then its Node object goes. Running it again after a partial failure
// finishes the job.
func (s *Server) RemoveNode(ctx context.Context, node *api.Node) error {
	if node.RaftId != 0 {
		if err := s.leaveRaft(ctx, node); err != nil {
			return err
		}
	}
	err := s.store.Update(ctx, func(tx *store.Tx) error {
		cur := tx.GetNode(node.Id)
		if cur == nil {
			return nil // removed meanwhile: done
		}
		return tx.Delete(cur)
	})
	if err != nil {
		return apierror.ToStatus(fmt.Errorf("delete node %s: %w", node.Hostname, err))
	}
	s.log.Info("node removed", "hostname", node.Hostname, "node_id", node.Id)
	return nil
}

func (s *Server) leaveRaft(ctx context.Context, node *api.Node) error {
	if node.RaftId == s.raft.RaftID() {
		return s.handOver(ctx, node)
	}
	err := s.raft.RemoveMember(ctx, node.RaftId)
	switch {
	case err == nil, errors.Is(err, voterset.ErrNoSuchMember):
		return nil // gone from raft, now or by an earlier attempt
	case errors.Is(err, voterset.ErrNotLeading):
		return reason.Error(codes.Unavailable, reason.NoLeader, "leadership changed during the removal; retrying reaches the new leader")
	}
	return apierror.ToStatus(err)
}

// handOverTimeout bounds a leadership handover: a promotion plus a few
// transfer attempts, well within the CLI's default timeout.
const handOverTimeout = 15 * time.Second

// handOver moves leadership away from this manager, which is being
// removed. The removal itself is then refused with the retryable
// no_leader: the client's retry reaches the new leader, which removes this
// one like any other member.
func (s *Server) handOver(ctx context.Context, node *api.Node) error {
	ctx, cancel := context.WithTimeout(ctx, handOverTimeout)
	defer cancel()
	_, err := s.raft.HandOver(ctx)
	switch {
	case errors.Is(err, voterset.ErrLastManager):
		return reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"%s is the last manager; a cluster cannot remove its last manager", node.Hostname)
	case err != nil:
		return apierror.ToStatus(fmt.Errorf("hand leadership over before removing %s: %w", node.Hostname, err))
	}
	return reason.Error(codes.Unavailable, reason.NoLeader,
		"leadership moved away from %s, which is being removed; retrying reaches the new leader", node.Hostname)
}
