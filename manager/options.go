package manager

import (
	"log/slog"
	"time"
)

// Option configures a Manager.
type Option func(*options)

type options struct {
	logger           *slog.Logger
	snapshotInterval uint64
	tickInterval     time.Duration
	heartbeatPeriod  time.Duration
	certLifetime     time.Duration
	quorumLossWindow time.Duration
	// gcHeadroom is the heap growth the garbage collector is allowed at
	// least while this manager runs (0: GOGC alone).
	gcHeadroom uint64
	// minBackupInterval is the shortest backup interval the cluster
	// update accepts (0: limits.MinBackupInterval).
	minBackupInterval time.Duration
	// coreOnly leaves out the subsystems that turn services into replicas
	// (tests of the raft and store path only).
	coreOnly bool
}

// DefaultQuorumLossWindow is how long a manager may be without a leader
// before it reports quorum_lost instead of no_leader.
const DefaultQuorumLossWindow = 10 * time.Second

func defaults() options {
	return options{logger: slog.Default(), quorumLossWindow: DefaultQuorumLossWindow}
}

// WithLogger sets the logger of the manager and its subsystems.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithSnapshotInterval sets how many applied entries the raft member takes
// a snapshot after (0: the raft package's default).
func WithSnapshotInterval(n uint64) Option { return func(o *options) { o.snapshotInterval = n } }

// WithTickInterval sets the raft tick (0: the raft package's default).
func WithTickInterval(d time.Duration) Option { return func(o *options) { o.tickInterval = d } }

// WithHeartbeatPeriod sets what the dispatcher asks of agents while this
// member leads (0: the dispatcher's default, 5 s).
func WithHeartbeatPeriod(d time.Duration) Option { return func(o *options) { o.heartbeatPeriod = d } }

// WithCertLifetime sets the lifetime of the node certificates signed while
// this member leads (0: 90 days).
func WithCertLifetime(d time.Duration) Option { return func(o *options) { o.certLifetime = d } }

// WithQuorumLossWindow sets how long this member may be without a leader
// before it reports quorum_lost (0 or less: DefaultQuorumLossWindow).
func WithQuorumLossWindow(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.quorumLossWindow = d
		}
	}
}

// WithGCHeadroom paces the process's garbage collector while the manager
// runs: the heap may grow by at least headroom bytes, or by as much as is
// live, before a collection (internal/gcpace, docs/adr/0032). 0 leaves
// the collector to GOGC. A process holding several managers (tests)
// should set it on none.
func WithGCHeadroom(headroom uint64) Option { return func(o *options) { o.gcHeadroom = headroom } }

// WithMinBackupInterval lowers the shortest scheduled-backup interval this
// manager accepts while it leads (0: limits.MinBackupInterval), for tests.
func WithMinBackupInterval(d time.Duration) Option {
	return func(o *options) { o.minBackupInterval = d }
}
