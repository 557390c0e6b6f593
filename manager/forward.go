package manager

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/proxy"
	"github.com/jaco-project/jaco/api/reason"
)

// The manager is the raftproxy wrappers' view of leadership
// (proxy.Leader): calls run here while this member leads and are forwarded
// to the leader otherwise (docs/design.md §6).
var _ proxy.Leader = (*Manager)(nil)

// IsLeader reports whether this member leads now.
func (m *Manager) IsLeader() bool { return m.raft.IsLeader() }

// LeaderConn returns a connection to the current leader, or an error with
// the reason word the caller should see: no_leader during an election,
// quorum_lost once that has lasted past the quorum-loss window.
func (m *Manager) LeaderConn(context.Context) (grpc.ClientConnInterface, error) {
	lead, _ := m.raft.Leader()
	if lead == 0 {
		if m.QuorumLost() {
			return nil, reason.Error(codes.Unavailable, reason.QuorumLost,
				"this manager has had no leader for %s: it cannot reach a majority of the managers", m.raft.LeaderlessFor().Round(time.Second))
		}
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "the cluster has no leader right now")
	}
	addr, ok := m.raft.ResolveAddress(lead)
	if !ok {
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "the leader's address is not known here yet")
	}
	conn, err := m.forward.Get(addr)
	if err != nil {
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "connect to the leader at %s: %v", addr, err)
	}
	return conn, nil
}

// QuorumLost reports whether this member has been without a leader for
// longer than the quorum-loss window.
func (m *Manager) QuorumLost() bool { return m.raft.LeaderlessFor() > m.quorumLossWindow }

// dialLeader opens a connection for forwarding calls to the leader. A
// leader that cannot be reached is, to the caller, no leader: its
// Unavailable errors become the retryable no_leader, so the CLI waits for
// the election instead of giving up.
func (m *Manager) dialLeader(addr string) (*grpc.ClientConn, error) {
	return m.dial(addr, grpc.WithChainUnaryInterceptor(unreachableLeaderIsNoLeader(addr)))
}

func unreachableLeaderIsNoLeader(addr string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.Unavailable && reason.Of(err) == "" {
			return reason.Error(codes.Unavailable, reason.NoLeader, "the leader at %s is unreachable: %s", addr, status.Convert(err).Message())
		}
		return err
	}
}
