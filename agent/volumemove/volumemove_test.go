package volumemove

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// serve serves src's ReadVolume on an in-memory listener; every call
// comes from caller, as the node's interceptor would establish it from
// the certificate.
func serve(t *testing.T, src *Source, caller identity.Identity) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.StreamInterceptor(func(s any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(s, &withCtx{ss, identity.NewContext(ss.Context(), caller)})
	}))
	api.RegisterAgentServiceServer(srv, &agentServer{src: src})
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

type withCtx struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *withCtx) Context() context.Context { return w.ctx }

type agentServer struct {
	api.UnimplementedAgentServiceServer
	src *Source
}

func (a *agentServer) ReadVolume(req *api.ReadVolumeRequest, s grpc.ServerStreamingServer[api.VolumeChunk]) error {
	return a.src.ReadVolume(req, s)
}

// source makes node "a"'s copy of volume db (id v1, generation 0) with
// one file, ordered to move to node "b" as generation 1.
func source(t *testing.T) *Source {
	t.Helper()
	dir := volumes.Dir(t.TempDir())
	data, err := dir.Source("db", "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Orders{}
	o.Set([]*api.VolumeMoveOrder{{VolumeId: "v1", Name: "db", Generation: 1, FromNode: "a", ToNode: "b", FromAddress: "bufnet"}})
	return &Source{NodeID: "a", Dir: dir, Orders: o}
}

func TestReadVolumeRefusesEveryoneButTheDestination(t *testing.T) {
	src := source(t)
	req := &api.ReadVolumeRequest{VolumeId: "v1", Generation: 1}
	for _, tc := range []struct {
		name   string
		caller identity.Identity
		req    *api.ReadVolumeRequest
		want   codes.Code
	}{
		{"another node", identity.Identity{Kind: identity.Node, NodeID: "c", Role: "worker"}, req, codes.PermissionDenied},
		{"a manager", identity.Identity{Kind: identity.Node, NodeID: "m", Role: "manager"}, req, codes.PermissionDenied},
		{"the operator", identity.Identity{Kind: identity.Operator}, req, codes.PermissionDenied},
		{"the destination, another generation", identity.Identity{Kind: identity.Node, NodeID: "b"}, &api.ReadVolumeRequest{VolumeId: "v1", Generation: 2}, codes.PermissionDenied},
		{"the destination", identity.Identity{Kind: identity.Node, NodeID: "b"}, req, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := api.NewAgentServiceClient(serve(t, src, tc.caller)).ReadVolume(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			for {
				_, err := s.Recv()
				if err == nil {
					n++
					continue
				}
				if tc.want == codes.OK {
					if !errors.Is(err, io.EOF) || n == 0 {
						t.Fatalf("ReadVolume: %v after %d messages, want the whole volume", err, n)
					}
				} else if status.Code(err) != tc.want {
					t.Fatalf("ReadVolume: %v after %d messages, want %v", err, n, tc.want)
				}
				return
			}
		})
	}
}

func TestMoverPullsVerifiesAndReportsDone(t *testing.T) {
	src := source(t)
	conn := serve(t, src, identity.Identity{Kind: identity.Node, NodeID: "b"})
	var mu sync.Mutex
	var reports []*api.ReportVolumeMoveRequest
	m := &Mover{
		NodeID: "b", Dir: volumes.Dir(t.TempDir()), Orders: &Orders{},
		Dial: func(context.Context, string) (*grpc.ClientConn, error) { return conn, nil },
		Report: func(_ context.Context, r *api.ReportVolumeMoveRequest) error {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, r)
			return nil
		},
		Log: slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	m.Start(ctx, &wg)
	defer func() { cancel(); wg.Wait() }()
	m.Follow(src.Orders.orders)
	waitfor.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reports {
			if r.GetError() != "" {
				t.Fatalf("copy failed: %s", r.GetError())
			}
			if r.GetDone() {
				return nil
			}
		}
		return status.Error(codes.Unavailable, "no done report yet")
	})
	b, err := os.ReadFile(filepath.Join(m.Dir.Path("db"), "f"))
	if err != nil || string(b) != "data" {
		t.Fatalf("copied file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(string(m.Dir), "db", "moving")); !os.IsNotExist(err) {
		t.Errorf("the copy still reads as incomplete: %v", err)
	}
	// The old copy's removal (generation 0) leaves the new one alone.
	if removed, err := m.Dir.Remove(&api.VolumeRef{Id: "v1", Name: "db", Generation: 0}); removed || err != nil {
		t.Errorf("removing generation 0 removed generation 1: %v %v", removed, err)
	}
	if removed, err := src.Dir.Remove(&api.VolumeRef{Id: "v1", Name: "db", Generation: 0}); !removed || err != nil {
		t.Errorf("removing generation 0 on the source: %v %v", removed, err)
	}
}
