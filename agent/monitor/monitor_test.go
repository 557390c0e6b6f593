package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/testclock"
	"github.com/jaco-project/jaco/internal/waitfor"
)

func TestTableRemembersAndForgets(t *testing.T) {
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tab := NewTable(clock.Now)
	if _, ok := tab.LastHeard("w1"); ok {
		t.Fatal("a node never heard is heard")
	}
	tab.Heard("w1")
	clock.Advance(1500 * time.Millisecond)
	if ago, ok := tab.LastHeard("w1"); !ok || ago != 1500*time.Millisecond {
		t.Fatalf("LastHeard = %s, %v; want 1.5s ago", ago, ok)
	}
	clock.Advance(forgetAfter)
	if _, ok := tab.LastHeard("w1"); ok {
		t.Fatal("a node silent past forgetAfter is still heard")
	}
	tab.Heard("w2") // and the sweep drops w1's entry
	if len(tab.heard) != 1 {
		t.Fatalf("table holds %d entries, want only w2's", len(tab.heard))
	}
}

// monitorServer counts heartbeats; stuck ones never answer.
type monitorServer struct {
	api.UnimplementedMonitorServiceServer
	beats atomic.Int64
	stuck bool
}

func (s *monitorServer) Heartbeat(ctx context.Context, _ *api.MonitorHeartbeatRequest) (*api.MonitorHeartbeatResponse, error) {
	s.beats.Add(1)
	if s.stuck {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &api.MonitorHeartbeatResponse{}, nil
}

func serve(t *testing.T, s *monitorServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterMonitorServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// beatsReach is a condition of waitfor.Holds: s has had n heartbeats.
func beatsReach(s *monitorServer, n int64) func() (bool, string) {
	return func() (bool, string) {
		got := s.beats.Load()
		return got >= n, fmt.Sprintf("%d heartbeats", got)
	}
}

// TestPingerHeartbeatsEveryMonitorOnItsOwn: heartbeats reach every monitor
// named, go on though one monitor never answers, and follow a new set.
func TestPingerHeartbeatsEveryMonitorOnItsOwn(t *testing.T) {
	good, stuck, next := &monitorServer{}, &monitorServer{stuck: true}, &monitorServer{}
	goodAddr, stuckAddr, nextAddr := serve(t, good), serve(t, stuck), serve(t, next)
	dial := func(_ context.Context, addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	p := NewPinger(dial, slog.Default())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	// The stuck monitor holds each call for a whole period; the good
	// one's heartbeats go on beside it, each loop its own.
	p.Set([]*api.MonitorPeer{{NodeId: "stuck", Address: stuckAddr}, {NodeId: "good", Address: goodAddr}}, 50*time.Millisecond)
	waitfor.Holds(t, 10*time.Second, "heartbeats to the good monitor while the other hangs", beatsReach(good, 5))
	if stuck.beats.Load() == 0 {
		t.Fatal("the stuck monitor was never called")
	}
	p.Set([]*api.MonitorPeer{{NodeId: "next", Address: nextAddr}}, 0)
	waitfor.Holds(t, 10*time.Second, "heartbeats to the new monitor", beatsReach(next, 2))
	was := good.beats.Load()
	waitfor.Holds(t, 10*time.Second, "more heartbeats to the new monitor", beatsReach(next, 6))
	if n := good.beats.Load(); n > was+1 {
		t.Fatalf("the monitor left out of the set got %d more heartbeats", n-was)
	}
	// An empty set (an older dispatcher) keeps the last one.
	p.Set(nil, 0)
	n := next.beats.Load()
	waitfor.Holds(t, 10*time.Second, "heartbeats to the kept monitor", beatsReach(next, n+2))
}
