package node

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/jaco-project/jaco/internal/syncbuf"
)

// A call whose handler ignores its context does not keep the daemon's
// stop waiting: the servers' stop gives up on it after two graces and
// says so.
func TestGracefulStopDoesNotWaitForAStuckHandlerForGood(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release) // lets the handler, and grpc's GracefulStop, end
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Stuck",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
			close(entered)
			<-release
			return &emptypb.Empty{}, nil
		}}},
	}, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _ = conn.Invoke(context.Background(), "/test.Stuck/Call", &emptypb.Empty{}, &emptypb.Empty{}) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach its handler within 10 s")
	}

	var out syncbuf.Buffer
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		gracefulStop(slog.New(slog.NewTextHandler(&out, nil)), srv, 20*time.Millisecond)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("gracefulStop waited more than 10 s for a stuck handler")
	}
	if !strings.Contains(out.String(), "gRPC calls still running after their server stopped") {
		t.Errorf("the stuck call was not logged; log:\n%s", out.String())
	}
}
