package manager

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// forwardTo returns a Control client that reaches addr as a manager
// forwards to its leader.
func forwardTo(t *testing.T, addr string) api.ControlServiceClient {
	t.Helper()
	opts := append(leaderDialOptions(addr), grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewControlServiceClient(conn)
}

func forwardedUpdate(t *testing.T, c api.ControlServiceClient) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Version: 7})
	return err
}

// TestForwardToUnreachableLeaderIsNoLeader: a leader refusing connections
// never saw the request, so the caller may retry it.
func TestForwardToUnreachableLeaderIsNoLeader(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now: connection refused
	err = forwardedUpdate(t, forwardTo(t, addr))
	if reason.Of(err) != reason.NoLeader || status.Code(err) != codes.Unavailable {
		t.Fatalf("write forwarded to a leader refusing connections: %v, want Unavailable %s", err, reason.NoLeader)
	}
}

// cuttingLeader is a leader whose connections break while it handles a
// write: the request arrived, the answer never leaves.
type cuttingLeader struct {
	api.UnimplementedControlServiceServer
	mu    sync.Mutex
	conns []net.Conn
}

func (l *cuttingLeader) Accept(lis net.Listener) (net.Conn, error) {
	c, err := lis.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *cuttingLeader) UpdateService(ctx context.Context, _ *api.UpdateServiceRequest) (*api.UpdateServiceResponse, error) {
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

type acceptFunc struct {
	net.Listener
	accept func(net.Listener) (net.Conn, error)
}

func (a acceptFunc) Accept() (net.Conn, error) { return a.accept(a.Listener) }

// TestForwardBrokenAfterSendIsOutcomeUnknown: once the leader has the
// request it may apply it, so a connection that breaks before the answer
// is outcome_unknown, which the client does not retry, and not no_leader,
// whose retry of an applied versioned write answers version_conflict.
func TestForwardBrokenAfterSendIsOutcomeUnknown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leader := &cuttingLeader{}
	srv := grpc.NewServer()
	api.RegisterControlServiceServer(srv, leader)
	go func() { _ = srv.Serve(acceptFunc{Listener: lis, accept: leader.Accept}) }()
	t.Cleanup(srv.Stop)
	err = forwardedUpdate(t, forwardTo(t, lis.Addr().String()))
	if reason.Of(err) != reason.OutcomeUnknown || status.Code(err) != codes.Unavailable {
		t.Fatalf("write whose connection to the leader broke after it was sent: %v, want Unavailable %s", err, reason.OutcomeUnknown)
	}
}

// refusingLeader answers every write with its own reason word.
type refusingLeader struct {
	api.UnimplementedControlServiceServer
	err error
}

func (l refusingLeader) UpdateService(context.Context, *api.UpdateServiceRequest) (*api.UpdateServiceResponse, error) {
	return nil, l.err
}

// TestForwardKeepsTheLeadersReason: an Unavailable that carries a reason
// word is the leader's answer (no_leader: it lost leadership before
// proposing; outcome_unknown: after), passed on unchanged.
func TestForwardKeepsTheLeadersReason(t *testing.T) {
	for _, word := range []string{reason.NoLeader, reason.OutcomeUnknown, reason.QuorumLost} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		api.RegisterControlServiceServer(srv, refusingLeader{err: reason.Error(codes.Unavailable, word, "the leader's own answer")})
		go func() { _ = srv.Serve(lis) }()
		err = forwardedUpdate(t, forwardTo(t, lis.Addr().String()))
		srv.Stop()
		if reason.Of(err) != word || reason.Sentence(err) != "the leader's own answer" {
			t.Errorf("leader answered %s: forwarded as %v", word, err)
		}
	}
}
