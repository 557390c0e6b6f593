// Package keyring keeps the keys that seal a jacod's files under autolock
// (docs/adr/0012-autolock.md, docs/design.md §13): the cluster's unlock
// key, which the node holds in memory only; the data keys it seals
// (node/raft-dek.key), which seal the raft state; and the node's TLS and
// overlay private keys, sealed with the data keys while autolock is on.
//
// A Keyring opens and writes those files for the daemon (files.go), opens
// a manager restarted locked with the unlock key, slowing down wrong keys
// (unlock.go, docs/adr/0023-unlock-rate-limit.md), and runs the autolock
// loop that brings the files of the manager of now in line with the
// cluster's autolock setting (autolock.go).
//
// The daemon (package node) owns the keyring and hands it what it needs
// through two small interfaces, Daemon and Manager. The keyring knows
// nothing else of either, so it links neither raft nor the store
// (internal/importrules) and is tested with fakes of both.
package keyring

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/encryption"
)

// Daemon is what the autolock loop asks of the daemon it serves.
type Daemon interface {
	// LockChanges takes the lock under which the daemon changes what it
	// runs (init, join, unlock, a role change, its stop), so that the
	// manager whose files are rewritten is neither stopped nor replaced
	// meanwhile. It fails once the daemon stops.
	LockChanges() (unlock func(), err error)
	// Manager is the manager the daemon runs now: nil while it runs none,
	// and while it is locked.
	Manager() Manager
}

// Manager is what the autolock loop needs of a running manager.
// *manager.Manager has this method set.
type Manager interface {
	// Cluster is the cluster object, which says whether autolock is on
	// and holds the unlock key; nil before the cluster is initialized.
	Cluster() *api.Cluster
	// ClusterChanged receives at each change of the cluster object and
	// is closed when ctx ends or the manager stops.
	ClusterChanged(ctx context.Context) <-chan struct{}
	// Rekey rewrites the raft state under sealer's current data key.
	Rekey(ctx context.Context, sealer *encryption.Sealer) error
}

// Config configures a Keyring.
type Config struct {
	// Dir is the data dir whose key files the keyring reads and writes.
	Dir datadir.Dir
	// Daemon is what the autolock loop (Run) asks; only Run needs it.
	Daemon Daemon
	// CheckInterval is how often the autolock loop checks the files
	// again, and so retries a pass that failed (0: 2 s, the daemon's
	// default role-check interval).
	CheckInterval time.Duration
	// Logger receives the autolock loop's and Unlock's records (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// defaultCheckInterval is Config.CheckInterval's default.
const defaultCheckInterval = 2 * time.Second

// Keyring is a node's keys: the unlock key in memory and the key files in
// its data dir. Its methods are safe for concurrent use.
type Keyring struct {
	dir      datadir.Dir
	daemon   Daemon
	interval time.Duration
	log      *slog.Logger

	// kek is the unlock key the data keys are sealed with while autolock
	// is on (files.go); nil when they are in clear.
	kek atomic.Pointer[encryption.Key]
	// settled: the files were brought in line with the cluster's autolock
	// setting since the manager started (autolock.go).
	settled atomic.Bool
	// kick asks the autolock loop for a pass now; one pending is enough.
	kick chan struct{}

	// unlockMu serializes Unlock: its rate limit is checked and moved in
	// one step (unlock.go).
	unlockMu      sync.Mutex
	failedUnlocks atomic.Uint32
	// unlockNotBefore: attempts to unlock before then are refused;
	// guarded by unlockMu.
	unlockNotBefore time.Time
}

// New returns the keyring of the data dir cfg.Dir. It reads nothing yet:
// the unlock key is held from Unlock or from an autolock pass on.
func New(cfg Config) *Keyring {
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = defaultCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Keyring{dir: cfg.Dir, daemon: cfg.Daemon, interval: cfg.CheckInterval, log: cfg.Logger,
		kick: make(chan struct{}, 1)}
}

// UnlockKey is the unlock key this node's data keys are sealed with, nil
// while they are in clear.
func (k *Keyring) UnlockKey() *encryption.Key { return k.kek.Load() }

// ForgetUnlockKey drops the unlock key: for a daemon that turns out not to
// have started after Unlock (it is still locked), and for a manager
// demoted to a worker, whose files are in clear since it has no data keys
// to seal them.
func (k *Keyring) ForgetUnlockKey() { k.kek.Store(nil) }
