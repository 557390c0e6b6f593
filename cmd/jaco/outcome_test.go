package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// deposedLeader holds one service and answers its first update as a
// leader deposed after proposing does when the entry commits anyway: the
// change is made, the caller hears the raft error, through the same
// mapping as the real Control API. A later update is checked against the
// version like the store's.
type deposedLeader struct {
	api.UnimplementedControlServiceServer
	mu       sync.Mutex
	replicas uint64
	version  uint64
	updates  int
}

func (l *deposedLeader) service() *api.Service {
	return &api.Service{Id: "svc-1", Meta: &api.Meta{Version: l.version}, Spec: &api.ServiceSpec{Name: "web", Image: "nginx", Replicas: l.replicas}}
}

func (l *deposedLeader) GetService(context.Context, *api.GetServiceRequest) (*api.GetServiceResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &api.GetServiceResponse{Service: l.service()}, nil
}

func (l *deposedLeader) UpdateService(_ context.Context, req *api.UpdateServiceRequest) (*api.UpdateServiceResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.updates++
	if req.Version != l.version {
		return nil, apierror.ToStatus(fmt.Errorf("update service web: %w", store.ErrVersionConflict))
	}
	l.replicas, l.version = req.Spec.Replicas, l.version+1
	if l.updates == 1 {
		return nil, apierror.ToStatus(fmt.Errorf("update service web: %w", raft.ErrLostLeadership))
	}
	return &api.UpdateServiceResponse{Service: l.service()}, nil
}

// TestServiceUpdateMayHaveBeenApplied: `jaco service update` whose write
// committed while its leader was deposed said version_conflict (the
// client retried the no_leader it was told, against the version the write
// itself had moved on). It must say the change may have been applied, and
// how to check, and not try again.
func TestServiceUpdateMayHaveBeenApplied(t *testing.T) {
	dir := t.TempDir()
	lis, err := net.Listen("unix", datadir.Dir(dir).Socket())
	if err != nil {
		t.Fatal(err)
	}
	leader := &deposedLeader{replicas: 1, version: 10}
	srv := grpc.NewServer()
	api.RegisterControlServiceServer(srv, leader)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	var stdout, stderr bytes.Buffer
	code := run([]string{"--data-dir", dir, "--timeout", "10s", "service", "scale", "web=3"}, strings.NewReader(""), &stdout, &stderr)
	got := stderr.String()
	if code != 1 || !strings.HasPrefix(got, "error: outcome_unknown: ") ||
		!strings.Contains(got, "may have been applied; check with `jaco service inspect web` before retrying") {
		t.Fatalf("jaco service scale: exit %d, stderr %q; want outcome_unknown saying the change may have been applied", code, got)
	}
	leader.mu.Lock()
	defer leader.mu.Unlock()
	if leader.updates != 1 || leader.replicas != 3 {
		t.Fatalf("%d update calls, %d replicas; want the one update, applied", leader.updates, leader.replicas)
	}
}

// A write the client stopped waiting for may still commit: it is reported
// outcome_unknown with the command to check, not unavailable.
func TestTimedOutWriteIsOutcomeUnknown(t *testing.T) {
	err := mayHaveApplied(status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "jaco service inspect web")
	got := describe(err)
	if !strings.HasPrefix(got, "outcome_unknown: no answer from jacod within --timeout") || !strings.Contains(got, "check with `jaco service inspect web`") {
		t.Fatalf("a timed-out write is described %q", got)
	}
	if got := describe(mayHaveApplied(status.Error(codes.Unavailable, "connection refused"), "x")); !strings.HasPrefix(got, "unavailable:") {
		t.Fatalf("an unreachable daemon is described %q, want unavailable (nothing was sent)", got)
	}
}
