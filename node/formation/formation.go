// Package formation is how a node comes to belong to a cluster
// (docs/design.md §4): `jaco cluster init`, a token join, the rejoin of a
// worker whose certificate expired (docs/adr/0039), ordinal formation's
// join reconciler (docs/adr/0013), static formation (docs/adr/0014) and
// --force-new-cluster (docs/adr/0011). Each makes the node's key and
// certificate, saves them, writes the raft state its manager starts
// from, and asks the daemon to start what runs on them. It also writes
// the raft state of a member promoted later, for the role loop
// (node/roles), since that is a joined member's too.
//
// A Former knows the daemon (package node) through the interfaces below:
// Daemon for the lifecycle state, the lock under which what the node
// runs changes, and the manager of now; Parts for what it starts; Keys
// for the files that need the daemon's keys; Expiry for what the role
// loop knows of the certificate's expiry. It reaches raft state through
// package manager only (docs/design.md §2) and never the agent.
package formation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/manager/encryption"
)

// Daemon is what formation sees of the daemon it runs in.
type Daemon interface {
	// State is the daemon's lifecycle state (docs/design.md §3): only an
	// uninitialized node inits or joins.
	State() api.NodeState
	// AdvertiseAddr is the address this node tells others to dial, and
	// so the one its member is recorded at.
	AdvertiseAddr() string
	// ClusterID is the cluster of the certificate this node presents,
	// "" before init.
	ClusterID() string
	// LockInit serializes a change of what the node runs against init,
	// join, unlock, a role change and the daemon's stop, which it
	// refuses once begun.
	LockInit() (unlock func(), err error)
	// Manager is the manager running now; an untyped nil when none runs.
	Manager() Manager
	// NoManager is the refusal of a call that needs the manager this
	// daemon does not run, in the lifecycle gate's words.
	NoManager() error
	// Fail stops the daemon with err: a formation that cannot go on.
	Fail(err error)
}

// Parts are what the daemon runs once it belongs to a cluster. Formation
// starts them, holding LockInit, once the files they run on are saved.
type Parts interface {
	// StartManager opens the raft state formation wrote and runs the
	// manager; the daemon is ready from then on.
	StartManager() error
	// WorkerReady makes the daemon ready as a worker, which runs no
	// manager.
	WorkerReady()
	// ReloadTLS has new handshakes present the certificate saved last
	// and verify peers against its CA bundle.
	ReloadTLS() error
	// StartAgent starts the agent, which runs on every node of a cluster.
	StartAgent() error
	// CloseManagerConns closes the pooled connections to managers: they
	// present the certificate they were opened with.
	CloseManagerConns()
}

// Manager is what formation reads of the manager running on this node;
// *manager.Manager is one.
type Manager interface {
	NodeID() string
	RaftID() uint64
	// RaftMembers are the raft group's members, sorted by raft id.
	RaftMembers() []*api.RaftMember
	IsVoter() bool
	// WaitReady returns once a leader is known and, when this member
	// leads, everything committed before is applied.
	WaitReady(ctx context.Context) error
	// Admission admits a formation joiner on the leader, forwarding to it
	// from other managers.
	Admission() api.AdmissionServiceServer
}

// Keys are the node's files that need the daemon's keys: under autolock
// the private key is sealed with the data keys (docs/adr/0012-autolock.md).
// *keyring.Keyring is one.
type Keys interface {
	LoadNodeFiles() (caPEM, certPEM, keyPEM []byte, err error)
	SaveNodeFiles(caPEM, certPEM, keyPEM []byte) error
	// NewDataKey writes a new data key for new raft state and returns
	// its sealer.
	NewDataKey() (*encryption.Sealer, error)
	// DataSealer opens the data keys of the raft state there is.
	DataSealer() (*encryption.Sealer, error)
}

// Expiry is what the role loop knows of this node's certificate expiry
// (docs/adr/0039-rejoin-expired-certificate.md); *roles.Poller is one.
type Expiry interface {
	// CertExpiredAt is when the certificate expired, and whether it has.
	CertExpiredAt() (time.Time, bool)
	// CertExpiredRefusal is the refusal of a call on a node whose
	// certificate expired, or nil.
	CertExpiredRefusal() error
}

// Config is what a Former is made of.
type Config struct {
	// Dir is the node's data dir: its node files, raft state,
	// managers.json and the operator token formation leaves there.
	Dir datadir.Dir
	// NodeName is this node's name in the cluster.
	NodeName string
	// CertLifetime is the lifetime of the certificates this node signs
	// itself (init, static formation, a forced cluster); 0: the CA's
	// default.
	CertLifetime time.Duration
	// Settings are the formation flags, parsed.
	Settings Settings

	Daemon Daemon
	Parts  Parts
	Keys   Keys
	Expiry Expiry
	Logger *slog.Logger
}

// Former makes a node a member of a cluster. Make it with New; its
// methods are safe for concurrent use, and those that change what the
// node runs take Daemon.LockInit.
type Former struct {
	cfg    Config
	d      Daemon
	parts  Parts
	keys   Keys
	expiry Expiry
	log    *slog.Logger
}

// New returns the Former of cfg. It starts nothing: Start does.
func New(cfg Config) *Former {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Former{cfg: cfg, d: cfg.Daemon, parts: cfg.Parts, keys: cfg.Keys, expiry: cfg.Expiry, log: log}
}

// Start starts the formation the settings ask for, if any, counted in wg:
// it runs until the node belongs to the cluster as formation wants it, or
// until ctx ends. What can only be checked once the advertise address is
// known is checked here, so that a mistake stops the daemon at start, not
// after the formation delay; Start's only error is such a mistake.
func (f *Former) Start(ctx context.Context, wg *sync.WaitGroup) error {
	s := f.cfg.Settings
	var run func(context.Context)
	switch {
	case s.Bootstrap:
		run = f.runOrdinal
	case s.Static != nil && f.initialized():
		return nil
	case s.Static != nil:
		i := slices.IndexFunc(s.Static, func(m StaticMember) bool { return m.Name == f.cfg.NodeName })
		if addr, advertise := s.Static[i].Addr, f.d.AdvertiseAddr(); addr != advertise {
			return fmt.Errorf("--initial-cluster gives %s the address %s, but it advertises %s (--advertise-addr)",
				f.cfg.NodeName, addr, advertise)
		}
		run = f.runStatic
	default:
		return nil
	}
	wg.Go(func() { run(ctx) })
	return nil
}

func (f *Former) initialized() bool {
	return f.d.State() != api.NodeState_NODE_STATE_UNINITIALIZED
}

// SaveOperatorToken writes the operator token, which nobody was there to
// be shown (a formation) or which a CA rotation repinned, to a file only
// root reads; the log says where, never what.
func (f *Former) SaveOperatorToken(token string) error {
	path := f.cfg.Dir.OperatorToken()
	if err := durable.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("save operator token: %w", err)
	}
	f.log.Info("operator token written; move it somewhere safe and delete the file", "path", path)
	return nil
}

// IsWorker reports whether dir holds a worker certificate. A manager
// certificate without raft state is the leftover of an init or a join cut
// short, and leaves the node uninitialized.
func IsWorker(dir datadir.Dir) bool {
	_, certPEM, _, err := ca.LoadNodeFiles(dir.Node())
	if err != nil {
		return false
	}
	id, err := ca.IdentityFromPEM(certPEM)
	return err == nil && id.Role == ca.RoleWorker
}

// internalError reports a failure of this daemon, not of the request.
func internalError(err error) error {
	return grpcstatus.Error(codes.Internal, err.Error())
}
