package latebind

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// TestCallsReachTheImplementationOfNow: a service registered before it has
// an implementation answers with impl's error, then is served by each
// implementation in turn, unary and streaming calls alike, through the
// server's interceptors.
func TestCallsReachTheImplementationOfNow(t *testing.T) {
	var current atomic.Pointer[health.Server]
	var intercepted atomic.Int32
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			intercepted.Add(1)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			intercepted.Add(1)
			return h(srv, ss)
		}),
	)
	Register(srv, &healthpb.Health_ServiceDesc, func() (any, error) {
		if h := current.Load(); h != nil {
			return h, nil
		}
		return nil, status.Error(codes.FailedPrecondition, "none yet")
	})
	lis := bufconn.Listen(1 << 16)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := healthpb.NewHealthClient(conn)

	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("unary call without an implementation: %v, want impl's FailedPrecondition", err)
	}
	if err := firstWatch(ctx, client, nil); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("stream without an implementation: %v, want impl's FailedPrecondition", err)
	}

	for _, want := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING} {
		h := health.NewServer()
		h.SetServingStatus("", want)
		current.Store(h)
		before := intercepted.Load()
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.Status != want {
			t.Fatalf("unary call: %v %v, want %v from the implementation of now", resp, err, want)
		}
		var got healthpb.HealthCheckResponse_ServingStatus
		if err := firstWatch(ctx, client, &got); err != nil || got != want {
			t.Fatalf("stream: %v %v, want %v from the implementation of now", got, err, want)
		}
		if n := intercepted.Load() - before; n != 2 {
			t.Fatalf("%d calls went through the interceptors, want 2", n)
		}
	}
}

func firstWatch(ctx context.Context, c healthpb.HealthClient, got *healthpb.HealthCheckResponse_ServingStatus) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	resp, err := w.Recv()
	if err != nil {
		return err
	}
	*got = resp.Status
	return nil
}
