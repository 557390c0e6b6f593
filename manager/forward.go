package manager

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
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

// dropMovedConns closes the forwarding connections to addresses no member
// has any more (a leader that moved to a new address, or left): one that
// failed would otherwise go on redialling the old address
// (docs/adr/0038).
func (m *Manager) dropMovedConns() { m.forward.Keep(m.managerAddrs()) }

// QuorumLost reports whether this member has been without a leader for
// longer than the quorum-loss window.
func (m *Manager) QuorumLost() bool { return m.raft.LeaderlessFor() > m.quorumLossWindow }

// RaftTerm is this member's raft term; every election raises it.
func (m *Manager) RaftTerm() uint64 { return m.raft.Status().Term }

// dialLeader opens a connection for forwarding calls to the leader.
func (m *Manager) dialLeader(addr string) (*grpc.ClientConn, error) {
	return m.dial(addr, leaderDialOptions(addr)...)
}

// leaderDialOptions give a forwarded call's transport failures the reason
// word that says whether the leader may have acted on it. A leader that
// could not be reached before the request left this manager (connection
// refused, no route, a connection already known broken: gRPC fails such a
// call at once, as no call waits for readiness) is, to the caller, no
// leader: the retryable no_leader, so the CLI waits for the election
// instead of giving up. Once the request was handed to the connection,
// the leader may have proposed it and the connection broken before the
// answer came back: outcome_unknown, which the client does not retry.
// "Handed to the connection" is gRPC's OutPayload event, raised after the
// request was queued for the wire, not once it arrived: a call that broke
// in between is reported unknown, never the other way round. Errors that
// carry a reason word are the leader's own answer and pass unchanged.
func leaderDialOptions(addr string) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithStatsHandler(requestSentHandler{}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			sent := new(atomic.Bool)
			err := invoker(context.WithValue(ctx, requestSentKey{}, sent), method, req, reply, cc, opts...)
			if status.Code(err) != codes.Unavailable || reason.Of(err) != "" {
				return err
			}
			msg := status.Convert(err).Message()
			if sent.Load() {
				return reason.Error(codes.Unavailable, reason.OutcomeUnknown,
					"the connection to the leader at %s broke after the request was sent (%s)", addr, msg)
			}
			return reason.Error(codes.Unavailable, reason.NoLeader, "the leader at %s is unreachable: %s", addr, msg)
		}),
	}
}

// requestSentKey holds, in a forwarded call's context, the flag that
// requestSentHandler sets once an attempt handed the request to the
// transport.
type requestSentKey struct{}

// requestSentHandler is the stats handler behind leaderDialOptions. Every
// attempt's context (transparent retries included) derives from the call's,
// so a request sent by any attempt marks the call.
type requestSentHandler struct{}

func (requestSentHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if p, ok := s.(*stats.OutPayload); ok && p.Client {
		if sent, ok := ctx.Value(requestSentKey{}).(*atomic.Bool); ok {
			sent.Store(true)
		}
	}
}

func (requestSentHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

func (requestSentHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (requestSentHandler) HandleConn(context.Context, stats.ConnStats) {}
