package node

// The daemon's two gRPC servers: the private unix socket and the TCP
// listener, their options, and the services registered on both.

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/grpcflow"
	"github.com/jaco-project/jaco/internal/latebind"
	"github.com/jaco-project/jaco/manager"
)

func (n *Node) listen() error {
	unixLis, err := listenPrivateSocket(n.cfg.socketPath())
	if err != nil {
		return err
	}
	n.unixLis = unixLis
	tcpLis, err := net.Listen("tcp", n.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", n.cfg.ListenAddr, err)
	}
	n.tcpLis = tcpLis
	n.advertise = n.cfg.advertiseAddr(tcpLis.Addr())

	base := &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return n.tls.Load(), nil
		},
	}
	unary, stream := n.grpcInterceptors()
	// Both servers take static flow-control windows: no ping a message.
	n.unixSrv = grpc.NewServer(append(grpcflow.ServerOptions(),
		grpc.Creds(insecure.NewCredentials()),
		grpcflow.StreamWorkers(),
		grpc.ChainUnaryInterceptor(append(unary, n.unaryAuth(localIdentity))...),
		grpc.ChainStreamInterceptor(append(stream, n.streamAuth(localIdentity))...),
	)...)
	n.tcpSrv = grpc.NewServer(append(grpcflow.ServerOptions(),
		grpc.Creds(credentials.NewTLS(base)),
		// Every node keeps a connection to a manager open (its session,
		// its role check), so what gRPC holds a connection is what a
		// manager holds a node (docs/bench/largestore.md).
		grpc.ReadBufferSize(tcpReadBuffer),
		grpcflow.StreamWorkers(),
		grpc.ChainUnaryInterceptor(append(unary, n.unaryAuth(n.tcpIdentity))...),
		grpc.ChainStreamInterceptor(append(stream, n.streamAuth(n.tcpIdentity))...),
	)...)
	for _, srv := range []*grpc.Server{n.unixSrv, n.tcpSrv} {
		n.register(srv)
	}
	return nil
}

// tcpReadBuffer is the read buffer gRPC puts over each connection to the
// TCP server: none. TLS already reads whole records into a buffer of its
// own and hands out their bytes; a second buffer over it held 8 KiB a
// connection more (gRPC's default, 32 KiB, was a third of a manager's
// memory a node) for no fewer reads from the socket.
const tcpReadBuffer = 0

func (n *Node) register(srv *grpc.Server) {
	api.RegisterClusterServiceServer(srv, &clusterService{n: n})
	api.RegisterNodeServiceServer(srv, nodeService{n: n})
	api.RegisterAgentServiceServer(srv, agentService{n: n})
	api.RegisterMonitorServiceServer(srv, monitorService{n: n})
	api.RegisterFormationServiceServer(srv, formationService{f: n.formation})
	healthpb.RegisterHealthServer(srv, healthService{n: n})
	for _, desc := range manager.ServiceDescs {
		latebind.Register(srv, desc, func() (any, error) { return n.managerService(desc.ServiceName) })
	}
}

// listenPrivateSocket binds a unix socket that only the owner can use
// from its first moment: it is bound in a fresh 0700 directory, made 0600,
// and only then renamed into place (chmod after binding in place would
// leave a window whatever the umask).
func listenPrivateSocket(path string) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, filepath.Base(path))
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", tmp, err)
	}
	// The listener would unlink its bind path on Close; that path is gone
	// after the rename, and the data dir lock makes the real one ours.
	lis.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		lis.Close()
		return nil, fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		lis.Close()
		return nil, fmt.Errorf("install socket %s: %w", path, err)
	}
	return lis, nil
}

// gracefulStop lets in-flight calls finish for up to grace, then cuts
// them. A cut call's context is cancelled, but grpc's GracefulStop still
// waits for its handler to return: one that does not within another
// grace is logged and left behind, so that the daemon's stop goes on (the
// process is ending) instead of waiting for it for good.
func gracefulStop(log *slog.Logger, srv *grpc.Server, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	srv.Stop()
	select {
	case <-done:
	case <-time.After(grace):
		log.Warn("gRPC calls still running after their server stopped; stopping without them", "waited", 2*grace)
	}
}
