// Package proxy is the runtime of the wrappers that protoc-gen-raftproxy
// generates (protobuf/plugin/raftproxy).
//
// Writes must reach the raft leader, but a client may call any manager. A
// generated wrapper asks a Router where each call runs: on this node, or on
// the leader through a client connection. LeaderRouter is the router the
// node uses. It carries the caller's verified identity to the leader in
// metadata, so forwarding never grants the caller more than it had, and it
// allows exactly one hop, so a stale view of who leads cannot bounce a call
// between managers.
package proxy

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// Router decides where a call runs.
type Router interface {
	// Route returns a nil conn when the call is to be served locally with
	// the returned ctx, or the conn to send it over together with the
	// (outgoing) ctx to send it with.
	Route(ctx context.Context) (grpc.ClientConnInterface, context.Context, error)
	// LocalRead returns nil when the read req, marked local_read, may be
	// answered from this node's store now, else the error the caller gets.
	// It may wait first (a linearizable read waits for the store to hold
	// every write acknowledged before it).
	LocalRead(ctx context.Context, req any) error
}

// Leader is this node's view of raft leadership and of its own store.
type Leader interface {
	// IsLeader reports whether this node leads now.
	IsLeader() bool
	// LeaderConn returns a connection to the current leader. Its errors
	// reach the client unchanged, so they should carry a reason word
	// (no_leader while there is none).
	LeaderConn(ctx context.Context) (grpc.ClientConnInterface, error)
	// LocalRead returns nil when this node's store may answer the local
	// read req, else the error the caller gets (with a reason word: a
	// manager still replaying its log answers not_ready).
	LocalRead(ctx context.Context, req any) error
}

// LeaderRouter serves calls on the leader and forwards them there from any
// other node.
type LeaderRouter struct {
	leader Leader
}

var _ Router = (*LeaderRouter)(nil)

// NewLeaderRouter returns a router that follows leader.
func NewLeaderRouter(leader Leader) *LeaderRouter {
	return &LeaderRouter{leader: leader}
}

// LocalRead implements Router: whether local reads are served is the
// leader view's to say.
func (r *LeaderRouter) LocalRead(ctx context.Context, req any) error {
	return r.leader.LocalRead(ctx, req)
}

// Route implements Router.
//
// ctx must carry the caller's identity (identity.NewContext, done by the
// node's interceptors): a call is never forwarded anonymously, since the
// leader would then act without knowing on whose behalf.
func (r *LeaderRouter) Route(ctx context.Context) (grpc.ClientConnInterface, context.Context, error) {
	if r.leader.IsLeader() {
		return nil, ctx, nil
	}
	// A malformed forwarded identity still marks the call as forwarded.
	if _, forwarded, _ := identity.Forwarded(ctx); forwarded {
		return nil, nil, reason.Error(codes.Unavailable, reason.NoLeader,
			"forwarded call reached a non-leader; refusing a second hop")
	}
	id, ok := identity.FromContext(ctx)
	if !ok {
		return nil, nil, status.Error(codes.Internal,
			"raftproxy: no caller identity in context; refusing to forward anonymously")
	}
	conn, err := r.leader.LeaderConn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if conn == nil {
		// A nil conn would make the wrapper serve a write on a follower.
		return nil, nil, reason.Error(codes.Unavailable, reason.NoLeader, "no connection to the leader")
	}
	// Fresh outgoing metadata: nothing the caller sent (its credentials
	// included) travels to the leader, only the identity this node verified.
	md := metadata.Pairs(identity.ForwardedKey, id.Encode())
	return conn, metadata.NewOutgoingContext(ctx, md), nil
}
