// Package roles is a node's side of its membership once it belongs to a
// cluster: it keeps what the node runs, the certificate it presents, the
// CAs it trusts and, on a manager, the address the cluster records for it
// in line with what the cluster holds (docs/design.md §4, "Roles",
// "Address change" and "Expired certificates"; §10, "CA rotation").
//
// A Poller runs two loops. The role and certificate loop asks the
// managers every interval (MembershipService.RenewCertificate without a
// request) which role the cluster holds for this node and which CAs it
// trusts. It installs a new CA bundle at once, renews the certificate at
// two thirds of its life or when another CA signs, and on a role change
// gets the new role's certificate and starts or stops the manager
// (renew.go, carotation.go). The address loop, on a manager, compares the
// address its own raft state records with its advertise address and asks
// the leader to move it (address.go). Both keep managers.json and the
// pooled connections to managers current (docs/adr/0038).
//
// The package knows nothing of how the daemon is built and never touches
// raft state or the store: it decides when and in what order, and the
// daemon (package node) does, through the Daemon and Files interfaces.
// Writing a promoted member's raft state, starting and stopping the
// manager, and sealing the key files under autolock stay the daemon's.
package roles

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/connpool"
	"github.com/jaco-project/jaco/node/internal/reconcile"
)

// Daemon is what the poller sees of the daemon it runs in and asks of it.
// Its methods are called from the poller's goroutines and from whoever
// calls RemovedFromCluster.
type Daemon interface {
	// State is the daemon's lifecycle state (docs/design.md §3): an
	// uninitialized or locked node has nothing to check.
	State() api.NodeState
	// AdvertiseAddr is the address this node tells others to dial.
	AdvertiseAddr() string
	// Manager is the manager running now; an untyped nil on a worker.
	Manager() Manager
	// AgentManagers are the managers the agent's sessions use now, nil
	// while no agent runs.
	AgentManagers() []string
	// LockInit serializes a change of what the node runs against init,
	// join, unlock and the daemon's stop, which it refuses once begun.
	LockInit() (unlock func(), err error)
	// StartManager opens the raft state WriteRaftState wrote and runs the
	// manager.
	StartManager() error
	// StopManager stops the manager of a demoted node and removes its raft
	// state and data keys. The leader already took the member out of
	// raft: a stop that says so is no error.
	StopManager() error
}

// Files are the node's files that need the daemon's keys. Under autolock
// the private key is sealed with the raft data keys, which only the
// daemon holds (docs/adr/0012-autolock.md); the certificates the poller
// reads from Config.NodeDir itself.
type Files interface {
	// LoadNodeFiles reads the CA bundle, the certificate and the private
	// key, opened.
	LoadNodeFiles() (caPEM, certPEM, keyPEM []byte, err error)
	// InstallNodeFiles saves them, the key sealed while autolock is on,
	// and has new handshakes present the certificate and verify peers
	// against the bundle. Open connections keep what they were opened
	// with.
	InstallNodeFiles(caPEM, certPEM, keyPEM []byte) error
	// ForgetUnlockKey has the files saved next written in clear: a
	// demoted node's worker key is, as a worker holds no data keys to
	// seal it with.
	ForgetUnlockKey()
	// WriteRaftState writes a new data key and an empty raft member with
	// raftID that knows members, for a manager the leader already added
	// to raft.
	WriteRaftState(clusterID, nodeID string, raftID uint64, members []*api.RaftMember) error
	// SaveOperatorToken rewrites Config.OperatorTokenFile.
	SaveOperatorToken(token string) error
}

// Manager is what the poller reads of the manager running on this node;
// *manager.Manager is one.
type Manager interface {
	NodeID() string
	RaftID() uint64
	// RaftMembers are the raft group's members, sorted by raft id.
	RaftMembers() []*api.RaftMember
	// Node is the store's record of the node id, nil when it has none.
	Node(id string) *api.Node
	// Replayed reports whether the member applied what its log held at
	// start: until then its records may be of before the restart.
	Replayed() bool
}

// Config is what a Poller is made of.
type Config struct {
	// NodeDir holds the node's CA bundle, certificate and private key
	// (datadir.Dir.Node).
	NodeDir string
	// ManagersFile is managers.json (datadir.Dir.JoinManagers): the
	// managers' addresses, asked when this node's own raft state names
	// none (a worker), and where a restart starts from.
	ManagersFile string
	// OperatorTokenFile is where ordinal formation left the operator
	// token (datadir.Dir.OperatorToken); a CA rotation repins it.
	OperatorTokenFile string
	// NodeName and DataDir are named in the way back an expired
	// certificate's error gives.
	NodeName, DataDir string
	// Interval is how often the role and certificate are checked, and the
	// address (node.Config.RoleCheckInterval). It must be positive.
	Interval time.Duration
	// NoAddressLoop leaves the address to ordinal formation's join
	// reconciler, which moves it through its own admission path
	// (docs/adr/0013-ordinal-formation.md).
	NoAddressLoop bool

	Daemon Daemon
	Files  Files
	// Conns are the connections to managers, one per address, which the
	// agent's sessions share. They carry the identity of the certificate
	// they were opened with: a role change closes them all.
	Conns  *connpool.Pool
	Logger *slog.Logger
}

// Poller keeps a node's role, certificate, trust and recorded address in
// line with the cluster. Make it with New, run it with Run.
type Poller struct {
	cfg   Config
	d     Daemon
	files Files
	conns *connpool.Pool
	log   *slog.Logger
	// kick asks the role and certificate loop for a round now: after an
	// installed certificate or CA bundle, to report it to the leader at
	// once, which moves a CA rotation on (docs/adr/0041-ca-rotation.md).
	kick chan struct{}
}

// New returns a Poller of cfg. It starts nothing: Run does.
func New(cfg Config) *Poller {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Poller{cfg: cfg, d: cfg.Daemon, files: cfg.Files, conns: cfg.Conns, log: log, kick: make(chan struct{}, 1)}
}

// Run runs the role and certificate loop and, unless NoAddressLoop, the
// address loop until ctx ends, and returns once both have. Run once.
func (p *Poller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if !p.cfg.NoAddressLoop {
		wg.Go(func() { p.runAddressLoop(ctx) })
	}
	p.runCertLoop(ctx)
	wg.Wait()
}

// runCertLoop checks the role and the certificate until ctx ends.
func (p *Poller) runCertLoop(ctx context.Context) {
	reconcile.Loop{Interval: p.cfg.Interval, Kick: p.kick, Logger: p.log,
		FailMsg: "role and certificate check failed; retrying", Step: p.checkCert}.Run(ctx)
}

// kickCertLoop asks for a check now.
func (p *Poller) kickCertLoop() { reconcile.Kick(p.kick) }

// ManagersChanged takes the managers' addresses as another source has
// them now (the agent's dispatcher session tells of a moved manager at
// once, the role check every interval): it keeps them for the next start
// and closes the connections to addresses no manager has any more.
func (p *Poller) ManagersChanged(addrs []string) {
	p.rememberManagers(addrs)
	p.keepManagerConns()
}

// removalGrace is how long a manager told it left raft waits to learn
// that it was demoted (and runs on as a worker) before it concludes it
// was removed from the cluster.
const removalGrace = 30 * time.Second

// RemovedFromCluster decides, for a manager whose raft member was
// removed, between a demotion (false: the cluster holds it as a worker,
// and the role loop is kicked to install the worker certificate) and a
// removal from the cluster (true: the daemon stops). A demotion also
// takes the member out of raft, so it asks first. It returns false when
// ctx ends before it knows.
func (p *Poller) RemovedFromCluster(ctx context.Context) bool {
	deadline := time.Now().Add(removalGrace)
	for time.Now().Before(deadline) {
		resp, err := p.callRenew(ctx, nil, nil)
		switch {
		case errors.Is(err, errRenewRefused):
			return true
		case err == nil && resp.Role == api.NodeRole_NODE_ROLE_WORKER:
			p.log.Info("left raft by a demotion; becoming a worker")
			p.kickCertLoop()
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
	return true
}
