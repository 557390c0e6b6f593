package client

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// scriptedControl answers UpdateService with its errors in turn, then
// success, counting the calls.
type scriptedControl struct {
	api.UnimplementedControlServiceServer
	mu      sync.Mutex
	answers []error
	calls   int
}

func (s *scriptedControl) UpdateService(context.Context, *api.UpdateServiceRequest) (*api.UpdateServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.answers) > 0 {
		err := s.answers[0]
		s.answers = s.answers[1:]
		return nil, err
	}
	return &api.UpdateServiceResponse{}, nil
}

func (s *scriptedControl) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// serveControl serves ctl on a unix socket and returns a client of it,
// retrying as the CLI's does.
func serveControl(t *testing.T, ctl api.ControlServiceServer) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "jaco.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterControlServiceServer(srv, ctl)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c, err := New(WithSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRetriesNoLeader: a write refused before it was proposed is retried
// until it goes through.
func TestRetriesNoLeader(t *testing.T) {
	ctl := &scriptedControl{answers: []error{
		reason.Error(codes.Unavailable, reason.NoLeader, "the cluster has no leader right now"),
	}}
	c := serveControl(t, ctl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Control.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web"}); err != nil {
		t.Fatalf("UpdateService after one no_leader: %v", err)
	}
	if n := ctl.count(); n != 2 {
		t.Errorf("%d calls, want 2: one no_leader, one retry", n)
	}
}

// TestDoesNotRetryOutcomeUnknown: a write that may have been applied is
// returned to the caller at once. A retry of an applied versioned update
// would answer version_conflict for a change that was made.
func TestDoesNotRetryOutcomeUnknown(t *testing.T) {
	ctl := &scriptedControl{answers: []error{
		reason.Error(codes.Unavailable, reason.OutcomeUnknown, "raft leadership changed while the write waited to commit"),
	}}
	c := serveControl(t, ctl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Control.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web"})
	if reason.Of(err) != reason.OutcomeUnknown {
		t.Fatalf("UpdateService: %v, want %s", err, reason.OutcomeUnknown)
	}
	if n := ctl.count(); n != 1 {
		t.Errorf("%d calls, want 1: outcome_unknown must not be retried", n)
	}
	if reason.Retryable(err) {
		t.Errorf("reason.Retryable(%v) = true", err)
	}
}
