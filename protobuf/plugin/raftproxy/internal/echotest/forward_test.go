package echotest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/proxy"
	"github.com/jaco-project/jaco/api/reason"
)

// caller is who calls the cluster in these tests.
var caller = identity.Identity{Kind: identity.Node, Role: "manager", NodeID: "m7"}

// transportIdentityKey stands in for the transport in these tests: a direct
// caller's identity is read from it, where the node would take it from the
// unix socket peer, the client certificate or the operator token.
const transportIdentityKey = "x-test-transport-identity"

// authenticate mimics the node's interceptors: a forwarded call runs as the
// identity the proxy carried, a direct call as the transport's identity.
func authenticate(ctx context.Context) (context.Context, error) {
	id, forwarded, err := identity.Forwarded(ctx)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "forwarded identity: %v", err)
	}
	if forwarded {
		return identity.NewContext(ctx, id), nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(transportIdentityKey); len(v) == 1 {
		id, err := identity.Decode(v[0])
		if err != nil {
			return nil, status.Errorf(codes.Unauthenticated, "transport identity: %v", err)
		}
		return identity.NewContext(ctx, id), nil
	}
	return ctx, nil
}

func unaryAuth(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func streamAuth(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := authenticate(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, authedStream{ServerStream: ss, ctx: ctx})
}

type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s authedStream) Context() context.Context { return s.ctx }

// echo is a node's local implementation. It reports who served the call and
// which identity it saw.
type echo struct {
	UnimplementedEchoServiceServer
	name   string
	served atomic.Int32
}

func (e *echo) answer(ctx context.Context, text string) *EchoResponse {
	e.served.Add(1)
	resp := &EchoResponse{Text: text, ServedBy: e.name}
	if id, ok := identity.FromContext(ctx); ok {
		resp.Caller = id.Encode()
	}
	return resp
}

func (e *echo) Write(ctx context.Context, r *EchoRequest) (*EchoResponse, error) {
	return e.answer(ctx, r.GetText()), nil
}

func (e *echo) Read(ctx context.Context, r *EchoRequest) (*EchoResponse, error) {
	return e.answer(ctx, r.GetText()), nil
}

func (e *echo) Stream(r *EchoRequest, stream grpc.ServerStreamingServer[EchoResponse]) error {
	for i := range r.GetCount() {
		if err := stream.Send(e.answer(stream.Context(), fmt.Sprint(r.GetText(), i))); err != nil {
			return err
		}
	}
	return nil
}

// fakeLeader is a node's fixed view of leadership and of its store.
type fakeLeader struct {
	leader bool
	conn   grpc.ClientConnInterface
	// readErr refuses local reads (a store still replaying its log).
	readErr error
}

func (f fakeLeader) IsLeader() bool { return f.leader }

func (f fakeLeader) LocalRead(context.Context, any) error { return f.readErr }

func (f fakeLeader) LeaderConn(context.Context) (grpc.ClientConnInterface, error) {
	return f.conn, nil
}

// node is one in-process gRPC server serving the generated wrapper.
type node struct {
	impl   *echo
	client EchoServiceClient
	conn   *grpc.ClientConn
}

func startNode(t *testing.T, name string, leader proxy.Leader) *node {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(unaryAuth), grpc.StreamInterceptor(streamAuth))
	impl := &echo{name: name}
	RegisterEchoServiceServer(srv, NewRaftProxyEchoServiceServer(impl, proxy.NewLeaderRouter(leader)))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	conn, err := grpc.NewClient("passthrough:///"+name,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &node{impl: impl, client: NewEchoServiceClient(conn), conn: conn}
}

// cluster is a leader, a follower that knows the leader, and a stale node
// that wrongly believes the follower leads.
type cluster struct {
	leader, follower, stale *node
}

func startCluster(t *testing.T) cluster {
	leader := startNode(t, "leader", fakeLeader{leader: true})
	follower := startNode(t, "follower", fakeLeader{conn: leader.conn})
	stale := startNode(t, "stale", fakeLeader{conn: follower.conn})
	return cluster{leader: leader, follower: follower, stale: stale}
}

// served returns how many calls each node's implementation answered.
func (c cluster) served() [3]int32 {
	return [3]int32{c.leader.impl.served.Load(), c.follower.impl.served.Load(), c.stale.impl.served.Load()}
}

// asCaller is a context whose calls arrive as caller.
func asCaller(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, transportIdentityKey, caller.Encode())
}

func checkAnswer(t *testing.T, resp *EchoResponse, servedBy string) {
	t.Helper()
	if resp.GetServedBy() != servedBy {
		t.Errorf("served by %q, want %q", resp.GetServedBy(), servedBy)
	}
	id, err := identity.Decode(resp.GetCaller())
	if err != nil || id != caller {
		t.Errorf("implementation saw caller %q (%v), want %v", resp.GetCaller(), err, caller)
	}
}

func TestWriteOnFollowerIsServedByLeaderAsCaller(t *testing.T) {
	c := startCluster(t)
	resp, err := c.follower.client.Write(asCaller(t), &EchoRequest{Text: "hi"})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkAnswer(t, resp, "leader")
	if got := c.served(); got != [3]int32{1, 0, 0} {
		t.Errorf("served (leader, follower, stale) = %v, want only the leader", got)
	}
}

func TestWriteOnLeaderIsServedLocally(t *testing.T) {
	c := startCluster(t)
	resp, err := c.leader.client.Write(asCaller(t), &EchoRequest{Text: "hi"})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkAnswer(t, resp, "leader")
}

func TestLocalReadOnFollowerIsServedByFollower(t *testing.T) {
	c := startCluster(t)
	resp, err := c.follower.client.Read(asCaller(t), &EchoRequest{Text: "hi"})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	checkAnswer(t, resp, "follower")
	if got := c.served(); got != [3]int32{0, 1, 0} {
		t.Errorf("served (leader, follower, stale) = %v, want only the follower", got)
	}
}

// TestLocalReadWaitsForTheStore: a node whose store may not answer yet
// (a manager replaying its log after a restart) refuses local reads with
// the leader view's error instead of answering from an old state.
func TestLocalReadWaitsForTheStore(t *testing.T) {
	notReady := reason.Error(codes.Unavailable, reason.NotReady, "still replaying")
	n := startNode(t, "restarting", fakeLeader{leader: true, readErr: notReady})
	_, err := n.client.Read(asCaller(t), &EchoRequest{Text: "hi"})
	if reason.Of(err) != reason.NotReady || status.Code(err) != codes.Unavailable {
		t.Fatalf("Read on a node not ready for reads = %v, want Unavailable %s", err, reason.NotReady)
	}
	if got := n.impl.served.Load(); got != 0 {
		t.Errorf("the implementation answered %d reads, want none", got)
	}
}

// recvAll reads stream to its end.
func recvAll(stream grpc.ServerStreamingClient[EchoResponse]) ([]*EchoResponse, error) {
	var out []*EchoResponse
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, resp)
	}
}

func TestStream(t *testing.T) {
	for _, entry := range []string{"follower", "leader"} {
		t.Run("via "+entry, func(t *testing.T) {
			c := startCluster(t)
			client := map[string]EchoServiceClient{"follower": c.follower.client, "leader": c.leader.client}[entry]
			stream, err := client.Stream(asCaller(t), &EchoRequest{Text: "m", Count: 5})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			got, err := recvAll(stream)
			if err != nil {
				t.Fatalf("Recv: %v", err)
			}
			if len(got) != 5 {
				t.Fatalf("got %d messages, want 5", len(got))
			}
			for i, resp := range got {
				if want := fmt.Sprint("m", i); resp.GetText() != want {
					t.Errorf("message %d = %q, want %q", i, resp.GetText(), want)
				}
				checkAnswer(t, resp, "leader")
			}
		})
	}
}

func TestSecondHopIsRefused(t *testing.T) {
	c := startCluster(t)
	_, err := c.stale.client.Write(asCaller(t), &EchoRequest{Text: "hi"})
	if reason.Of(err) != reason.NoLeader || status.Code(err) != codes.Unavailable {
		t.Fatalf("Write through two non-leaders = %v, want Unavailable %s", err, reason.NoLeader)
	}

	stream, err := c.stale.client.Stream(asCaller(t), &EchoRequest{Text: "m", Count: 5})
	if err == nil {
		_, err = recvAll(stream)
	}
	if reason.Of(err) != reason.NoLeader {
		t.Fatalf("Stream through two non-leaders = %v, want %s", err, reason.NoLeader)
	}
	if got := c.served(); got != [3]int32{} {
		t.Errorf("served (leader, follower, stale) = %v, want none", got)
	}
}

func TestCallWithoutIdentityIsNotForwarded(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := c.follower.client.Write(ctx, &EchoRequest{Text: "hi"})
	if status.Code(err) != codes.Internal {
		t.Fatalf("anonymous Write = %v, want Internal", err)
	}
	if got := c.served(); got != [3]int32{} {
		t.Errorf("served (leader, follower, stale) = %v, want none", got)
	}
}
