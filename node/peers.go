package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// clientTLS returns the mutual-TLS config this node dials other nodes
// with, read from the node files once per identity (reloadTLS drops it):
// dials happen on the raft Ready loop's path.
func (n *Node) clientTLS() (*tls.Config, error) {
	if cfg := n.clientTLSCache.Load(); cfg != nil {
		return cfg, nil
	}
	caPEM, certPEM, keyPEM, err := n.loadNodeFiles()
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	cfg, err := ca.ClientTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	pair := cfg.Certificates[0]
	n.clientCert.Store(&pair)
	// Connections outlive certificates (renewal, role change): whenever a
	// connection (re)handshakes, it presents the certificate of now.
	cfg.Certificates = nil
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if p := n.clientCert.Load(); p != nil {
			return p, nil
		}
		if _, err := n.clientTLS(); err != nil {
			return nil, err
		}
		return n.clientCert.Load(), nil
	}
	n.clientTLSCache.Store(cfg)
	return cfg, nil
}

// dialPeer opens a lazy mTLS connection to another node.
func (n *Node) dialPeer(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	cfg, err := n.clientTLS()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		// Managers come and go (restarts, a joiner still presenting its
		// pre-join certificate): retry within a second or two, not gRPC's
		// default of up to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second,
		}, MinConnectTimeout: 5 * time.Second})}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

// dialLeader opens a connection for forwarding calls to the leader. A
// leader that cannot be reached is, to the caller, no leader: its
// Unavailable errors become the retryable no_leader, so the CLI waits for
// the election instead of giving up.
func (n *Node) dialLeader(addr string) (*grpc.ClientConn, error) {
	return n.dialPeer(addr, grpc.WithChainUnaryInterceptor(unreachableLeaderIsNoLeader(addr)))
}

func unreachableLeaderIsNoLeader(addr string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.Unavailable && reason.Of(err) == "" {
			return reason.Error(codes.Unavailable, reason.NoLeader, "the leader at %s is unreachable: %s", addr, status.Convert(err).Message())
		}
		return err
	}
}

// leaderConns keeps one connection per manager address for forwarding
// calls to the leader (raftproxy). Connections are lazy and cheap; they
// are closed when the node stops.
type leaderConns struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func (c *leaderConns) get(addr string, dial func(string) (*grpc.ClientConn, error)) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[addr]; ok {
		return conn, nil
	}
	conn, err := dial(addr)
	if err != nil {
		return nil, err
	}
	if c.conns == nil {
		c.conns = make(map[string]*grpc.ClientConn)
	}
	c.conns[addr] = conn
	return conn, nil
}

func (c *leaderConns) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// leader tells the raftproxy wrappers where the leader is.
type leader struct{ n *Node }

func (l leader) IsLeader() bool {
	m := l.n.Manager()
	return m != nil && m.Raft.IsLeader()
}

// LeaderConn returns a connection to the current leader.
func (l leader) LeaderConn(context.Context) (grpc.ClientConnInterface, error) {
	m := l.n.Manager()
	if m == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.NotAManager, "this node is not a manager")
	}
	lead, _ := m.Raft.Leader()
	if lead == 0 {
		if l.n.quorumLost() {
			return nil, reason.Error(codes.Unavailable, reason.QuorumLost,
				"this manager has had no leader for %s: it cannot reach a majority of the managers", m.Raft.LeaderlessFor().Round(time.Second))
		}
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "the cluster has no leader right now")
	}
	addr, ok := m.Raft.ResolveAddress(lead)
	if !ok {
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "the leader's address is not known here yet")
	}
	conn, err := l.n.leaderConns.get(addr, l.n.dialLeader)
	if err != nil {
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "connect to the leader at %s: %v", addr, err)
	}
	return conn, nil
}

// quorumLost reports whether this manager has been leaderless for longer
// than the quorum-loss window.
func (n *Node) quorumLost() bool {
	m := n.Manager()
	return m != nil && m.Raft.LeaderlessFor() > n.cfg.QuorumLossWindow
}
