package proxy

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

type fakeLeader struct {
	leader bool
	conn   grpc.ClientConnInterface
	err    error
	dials  int
}

func (f *fakeLeader) IsLeader() bool { return f.leader }

func (f *fakeLeader) LocalRead(context.Context, any) error { return nil }

func (f *fakeLeader) LeaderConn(context.Context) (grpc.ClientConnInterface, error) {
	f.dials++
	return f.conn, f.err
}

// fakeConn is never called; Route only hands it back.
type fakeConn struct{ grpc.ClientConnInterface }

var caller = identity.Identity{Kind: identity.Node, Role: "manager", NodeID: "n1"}

func TestRouteLeaderServesLocally(t *testing.T) {
	ctx := identity.NewContext(context.Background(), caller)
	conn, got, err := NewLeaderRouter(&fakeLeader{leader: true}).Route(ctx)
	if err != nil || conn != nil || got != ctx {
		t.Fatalf("Route on leader = %v, %v, %v; want nil conn, same ctx, nil", conn, got, err)
	}
}

func TestRouteLeaderServesForwardedCall(t *testing.T) {
	ctx := metadata.NewIncomingContext(context.Background(),
		metadata.Pairs(identity.ForwardedKey, caller.Encode()))
	conn, _, err := NewLeaderRouter(&fakeLeader{leader: true}).Route(ctx)
	if err != nil || conn != nil {
		t.Fatalf("Route of a forwarded call on leader = %v, %v; want local", conn, err)
	}
}

func TestRouteForwardsWithFreshMetadata(t *testing.T) {
	leader := &fakeLeader{conn: fakeConn{}}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer secret"))
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("stale", "x"))
	ctx = identity.NewContext(ctx, caller)

	conn, out, err := NewLeaderRouter(leader).Route(ctx)
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	if conn != (fakeConn{}) {
		t.Fatalf("conn = %v, want the leader's", conn)
	}
	md, _ := metadata.FromOutgoingContext(out)
	want := metadata.Pairs(identity.ForwardedKey, caller.Encode())
	if len(md) != len(want) || len(md.Get(identity.ForwardedKey)) != 1 ||
		md.Get(identity.ForwardedKey)[0] != caller.Encode() {
		t.Fatalf("outgoing metadata = %v, want exactly %v", md, want)
	}
}

func TestRouteRefusesSecondHop(t *testing.T) {
	for name, value := range map[string]string{"well formed": caller.Encode(), "malformed": "garbage"} {
		t.Run(name, func(t *testing.T) {
			leader := &fakeLeader{conn: fakeConn{}}
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(identity.ForwardedKey, value))
			ctx = identity.NewContext(ctx, caller)
			_, _, err := NewLeaderRouter(leader).Route(ctx)
			if reason.Of(err) != reason.NoLeader || status.Code(err) != codes.Unavailable {
				t.Fatalf("err = %v, want Unavailable %s", err, reason.NoLeader)
			}
			if leader.dials != 0 {
				t.Fatalf("LeaderConn called %d times for a second hop", leader.dials)
			}
		})
	}
}

func TestRouteRefusesAnonymousCall(t *testing.T) {
	leader := &fakeLeader{conn: fakeConn{}}
	_, _, err := NewLeaderRouter(leader).Route(context.Background())
	if status.Code(err) != codes.Internal {
		t.Fatalf("err = %v, want Internal", err)
	}
	if leader.dials != 0 {
		t.Fatalf("LeaderConn called %d times for an anonymous call", leader.dials)
	}
}

func TestRouteReturnsLeaderConnErrorUnchanged(t *testing.T) {
	noLeader := reason.Error(codes.Unavailable, reason.NoLeader, "no leader elected")
	ctx := identity.NewContext(context.Background(), caller)
	_, _, err := NewLeaderRouter(&fakeLeader{err: noLeader}).Route(ctx)
	if !errors.Is(err, noLeader) {
		t.Fatalf("err = %v, want %v", err, noLeader)
	}
}

func TestRouteRefusesNilLeaderConn(t *testing.T) {
	ctx := identity.NewContext(context.Background(), caller)
	conn, _, err := NewLeaderRouter(&fakeLeader{}).Route(ctx)
	if reason.Of(err) != reason.NoLeader || conn != nil {
		t.Fatalf("Route = %v, %v; want %s", conn, err, reason.NoLeader)
	}
}
