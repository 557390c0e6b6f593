// Package node is the jacod daemon: its data dir and lock, lifecycle
// state, TLS and listeners, and the agent. It wires in what has a package
// of its own: the keys autolock seals (node/keyring, unlock.go), how the
// node comes to belong to a cluster (node/formation: init, join, rejoin,
// ordinal and static formation, --force-new-cluster; formationdaemon.go)
// and how its role follows the cluster's (node/roles, roledaemon.go).
// What a manager runs is package manager's: the daemon opens a Manager
// when it holds manager raft state (after init, join, unlock or a
// promotion), stops it at demotion, and routes the manager's gRPC
// services to it (services.go). A worker runs no manager.
//
// A daemon is in one lifecycle state (docs/design.md §3). It starts
// uninitialized when its data dir has no raft state and ready when it has;
// Init moves it from the first to the second. The state gates which RPCs
// are served (see auth.go).
package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/agent"
	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/agent/monitor"
	"github.com/jaco-project/jaco/agent/netplane"
	"github.com/jaco-project/jaco/agent/volumemove"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/connpool"
	"github.com/jaco-project/jaco/internal/httpserve"
	"github.com/jaco-project/jaco/manager"
	"github.com/jaco-project/jaco/manager/dashboard"
	"github.com/jaco-project/jaco/node/formation"
	"github.com/jaco-project/jaco/node/keyring"
	"github.com/jaco-project/jaco/node/roles"
)

// Node is a running jacod.
type Node struct {
	cfg  Config
	log  *slog.Logger
	lock *dirLock

	// initMu serializes what changes what the node runs (init, join,
	// unlock, a role change, ...) against itself and Stop; take it with
	// lockInit, which refuses once stopping is set.
	initMu   sync.Mutex
	stopping bool         // guarded by initMu
	state    atomic.Int32 // api.NodeState
	mgr      atomic.Pointer[manager.Manager]
	tls      atomic.Pointer[tls.Config]
	// clientTLSCache is the config for dialing other nodes (peers.go);
	// clientCert the certificate it presents, read at each handshake.
	clientTLSCache atomic.Pointer[tls.Config]
	clientCert     atomic.Pointer[tls.Certificate]
	// trustPool is the CAs this node trusts now (ca.pem), read by every
	// handshake this node dials.
	trustPool atomic.Pointer[x509.CertPool]
	// clusterID is the cluster of this node's certificate ("" before init).
	clusterID atomic.Value
	// keys seal this node's files under autolock, hold the unlock key
	// and run the autolock loop (node/keyring).
	keys *keyring.Keyring

	agent atomic.Pointer[agent.Agent]
	// monitors records the nodes that heartbeat to this one (monitor.go).
	monitors *monitor.Table
	// plane is this node's network plane (agent/netplane), set with the
	// agent.
	plane atomic.Pointer[netplane.Plane]
	// volumeSource serves this node's volumes to the nodes they move to
	// (docs/adr/0064-volume-move.md); nil until the agent starts.
	volumeSource atomic.Pointer[volumemove.Source]
	agentMu      sync.Mutex // guards starting and stopping the agent
	agentStop    context.CancelFunc
	containerd   *ctrd.Runtime

	unixLis, tcpLis net.Listener
	unixSrv, tcpSrv *grpc.Server
	advertise       string
	// grpcMetrics count and time the gRPC calls, and metricsSrv serves
	// the metrics; both nil when Config.MetricsAddr is empty (metrics.go).
	grpcMetrics *grpcprom.ServerMetrics
	metricsSrv  *httpserve.Server
	// dashboardSrv serves the dashboard; nil when Config.DashboardAddr
	// is empty (dashboard.go).
	dashboardSrv *dashboard.Server
	// managerConns are the connections to managers that the role and
	// certificate loop asks on and the agent's sessions run over, one per
	// manager; they carry this node's identity of when they were opened,
	// so they are closed when its role changes.
	managerConns *connpool.Pool
	// roles checks this node's role, certificate, trusted CAs and
	// recorded address against the cluster's (node/roles, wired in
	// roledaemon.go).
	roles *roles.Poller
	// formation inits, joins and forms the cluster and writes the raft
	// state a member starts from (node/formation, wired in
	// formationdaemon.go).
	formation *formation.Former

	// The role, address and autolock loops and formation run under
	// loopCtx; Stop ends them before anything else, since they take
	// initMu.
	loopCtx    context.Context
	loopCancel context.CancelFunc
	loopWG     sync.WaitGroup

	fatal    chan error
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

// ErrRemoved stops a daemon whose node was removed from the cluster. Its
// data dir is of no further use: wipe it to join again with a new token.
var ErrRemoved = errors.New("this node was removed from the cluster; wipe its data dir to join again")

// New prepares a daemon on cfg.DataDir: takes the data dir lock, opens the
// raft state if there is one, and binds the listeners. Run serves.
func New(cfg Config) (_ *Node, err error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// The data dir holds keys: whoever made it, only its owner enters it.
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("restrict data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := cfg.formation.CheckState(cfg.raftDir()); err != nil {
		lock.release()
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, lock: lock, fatal: make(chan error, 1), monitors: monitor.NewTable(nil),
		grpcMetrics: newGRPCMetrics(cfg.MetricsAddr != "")}
	n.keys = keyring.New(keyring.Config{Dir: cfg.dir(), Daemon: keyringDaemon{n},
		CheckInterval: cfg.RoleCheckInterval, Logger: cfg.Logger})
	n.managerConns = connpool.New(func(addr string) (*grpc.ClientConn, error) { return n.dialPeer(addr) })
	n.roles = n.newRoles()
	n.formation = n.newFormation()
	n.loopCtx, n.loopCancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	n.state.Store(int32(api.NodeState_NODE_STATE_UNINITIALIZED))
	locked, err := n.keys.DataKeysSealed()
	if err != nil {
		return nil, err
	}
	if cfg.ForceNewCluster && !locked {
		if err := n.formation.ForceNewCluster(); err != nil {
			return nil, err
		}
	}
	expiredAt, expired := n.roles.CertExpiredAt()
	if expired && (locked || manager.StateExists(cfg.raftDir())) {
		return nil, n.roles.CertExpiredError(expiredAt, true)
	}
	switch {
	case locked:
		// Autolock: nothing opens until `jaco node unlock` (unlock.go).
		n.state.Store(int32(api.NodeState_NODE_STATE_LOCKED))
		n.log.Warn("autolock is on and this manager restarted: it is locked; run 'jaco node unlock' on it")
	case manager.StateExists(cfg.raftDir()):
		if err := n.startManager(); err != nil {
			return nil, err
		}
	case formation.IsWorker(cfg.dir()):
		n.state.Store(int32(api.NodeState_NODE_STATE_READY))
	}
	if err := n.reloadTLS(); err != nil {
		return nil, err
	}
	if err := n.listen(); err != nil {
		return nil, err
	}
	if err := n.serveMetrics(); err != nil {
		return nil, err
	}
	if err := n.serveDashboard(); err != nil {
		return nil, err
	}
	switch {
	case n.initialized() && expired:
		// A worker: its agent could reach no manager. It starts with
		// the rejoin (node/formation); the replicas run on meanwhile.
		n.log.Error("jacod cannot rejoin its cluster by itself", "reason", reason.CertificateExpired,
			"err", n.roles.CertExpiredError(expiredAt, false))
	case n.initialized() && !locked:
		if err := n.startAgent(); err != nil {
			return nil, err
		}
	}
	n.loopWG.Add(2)
	go func() {
		defer n.loopWG.Done()
		n.roles.Run(n.loopCtx)
	}()
	go func() {
		defer n.loopWG.Done()
		n.keys.Run(n.loopCtx)
	}()
	if err := n.formation.Start(n.loopCtx, &n.loopWG); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return n, nil
}

// State is the daemon's lifecycle state.
func (n *Node) State() api.NodeState { return api.NodeState(n.state.Load()) }

func (n *Node) initialized() bool { return n.State() != api.NodeState_NODE_STATE_UNINITIALIZED }

// TCPAddr is the bound TCP address (useful when listening on port 0).
func (n *Node) TCPAddr() net.Addr { return n.tcpLis.Addr() }

// AdvertiseAddr is the address this node tells others to dial.
func (n *Node) AdvertiseAddr() string { return n.advertise }

// Manager is the running manager, nil while uninitialized.
func (n *Node) Manager() *manager.Manager { return n.mgr.Load() }

// startManager opens the raft state with the data key and runs the manager.
func (n *Node) startManager() error {
	sealer, err := n.keys.DataSealer()
	if err != nil {
		return err
	}
	m, err := manager.Open(n.cfg.raftDir(), sealer, n.dialPeer,
		manager.WithLogger(n.log),
		manager.WithSnapshotInterval(n.cfg.SnapshotInterval),
		manager.WithTickInterval(n.cfg.TickInterval),
		manager.WithHeartbeatPeriod(n.cfg.HeartbeatPeriod),
		manager.WithMinBackupInterval(n.cfg.MinBackupInterval),
		manager.WithCertLifetime(n.cfg.CertLifetime),
		manager.WithQuorumLossWindow(n.cfg.QuorumLossWindow),
		manager.WithGCHeadroom(n.cfg.GCHeadroom))
	if err != nil {
		return err
	}
	n.mgr.Store(m)
	n.state.Store(int32(api.NodeState_NODE_STATE_READY))
	n.keys.ManagerStarted()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		var err error
		select {
		case <-m.Done():
			err = m.Err()
			if errors.Is(err, manager.ErrRemoved) {
				err = ErrRemoved
			} else if err != nil {
				err = fmt.Errorf("raft member failed: %w", err)
			}
		case <-m.Removed():
			err = ErrRemoved
		}
		if n.Manager() != m {
			return // stopped on purpose (a demotion)
		}
		if errors.Is(err, ErrRemoved) && !n.roles.RemovedFromCluster(n.loopCtx) {
			// A demotion also takes the member out of raft: the role
			// loop installs the worker certificate, and the node runs on.
			err = nil
		}
		if err != nil {
			select {
			case n.fatal <- err:
			default:
			}
		}
	}()
	return nil
}

func (n *Node) reloadTLS() error {
	n.clientTLSCache.Store(nil)
	n.clientCert.Store(nil)
	cfg, err := n.serverTLS()
	if err != nil {
		return err
	}
	n.tls.Store(cfg)
	if caPEM, _, _, err := ca.LoadNodeFiles(n.cfg.nodeDir()); err == nil {
		pool, err := ca.TrustPool(caPEM)
		if err != nil {
			return fmt.Errorf("node CA bundle: %w", err)
		}
		n.trustPool.Store(pool)
	}
	return nil
}

// Run serves until ctx ends or the raft member fails, then stops.
func (n *Node) Run(ctx context.Context) error {
	serveErr := make(chan error, 2)
	for _, s := range []struct {
		srv *grpc.Server
		lis net.Listener
	}{{n.unixSrv, n.unixLis}, {n.tcpSrv, n.tcpLis}} {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := s.srv.Serve(s.lis); err != nil {
				serveErr <- fmt.Errorf("serve %s: %w", s.lis.Addr(), err)
			}
		}()
	}
	n.log.Info("jacod serving", "state", enumword.Of(n.State()), "socket", n.cfg.socketPath(),
		"listen", n.tcpLis.Addr().String(), "advertise", n.advertise, "data_dir", n.cfg.DataDir)
	var err error
	select {
	case <-ctx.Done():
	case err = <-n.fatal:
	case err = <-serveErr:
	}
	if serr := n.Stop(); err == nil {
		err = serr
	}
	return err
}

// Stop stops serving, stops the manager and releases the data dir.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		w := watchStop(n.log, stopReportEvery, "the node's loops")
		defer w.end()
		if n.loopCancel != nil {
			n.loopCancel()
		}
		n.loopWG.Wait()
		// The dashboard first: its event streams end with it, and its
		// login needs initMu no more than its pages do.
		w.enter("the dashboard")
		if n.dashboardSrv != nil {
			n.dashboardSrv.Stop()
		}
		w.enter("an init, join or role change in progress")
		n.initMu.Lock()
		n.stopping = true
		n.initMu.Unlock()
		w.enter("the hand-over of leadership")
		n.handOver()
		// The agent next: its session streams to this node's own server
		// would hold the graceful stop up to its deadline.
		w.enter("the agent")
		n.stopAgent()
		w.enter("the servers' graceful stop")
		var stopping sync.WaitGroup
		for _, srv := range []*grpc.Server{n.unixSrv, n.tcpSrv} {
			if srv != nil {
				stopping.Go(func() { gracefulStop(n.log, srv, 5*time.Second) })
			}
		}
		stopping.Wait()
		for _, lis := range []net.Listener{n.unixLis, n.tcpLis} {
			if lis != nil {
				lis.Close()
			}
		}
		if n.unixLis != nil {
			os.Remove(n.cfg.socketPath())
		}
		if m := n.mgr.Load(); m != nil {
			w.enter("the manager")
			n.stopErr = m.Stop()
		}
		w.enter("the connections to other managers")
		n.managerConns.CloseAll()
		if n.metricsSrv != nil {
			w.enter("the metrics server")
			n.metricsSrv.Stop()
		}
		w.enter("the agent's and the networks' goroutines")
		n.wg.Wait()
		if n.containerd != nil {
			w.enter("the containerd client")
			n.containerd.Close()
		}
		if err := n.lock.release(); err != nil && n.stopErr == nil {
			n.stopErr = err
		}
	})
	return n.stopErr
}
