// Package manager composes what a manager runs: the store, the raft member
// that replicates it, and the services that read and write it.
//
// Leader-only subsystems (voter reconciler, join-token sweeper, and those
// the node passes in: dispatcher, scheduler, orchestrator, role
// reconciler) run under the leader runner (leader.go):
// started when this member becomes leader, stopped when it stops being
// one; they meet in the store and never call each other.
package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	etcdraft "go.etcd.io/raft/v3"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/rolemanager"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/raft/transport"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Config configures a Manager.
type Config struct {
	// RaftDir holds the raft log and snapshots.
	RaftDir string
	// Store is the (empty) store to rebuild; the node creates it first so
	// that services can be registered before the manager exists.
	Store  *store.Store
	Sealer *encryption.Sealer
	Logger *slog.Logger
	// SnapshotInterval and TickInterval pass to the raft member; zero means
	// the raft package's default.
	SnapshotInterval uint64
	TickInterval     time.Duration
	// Dial opens a connection to another manager (mutual TLS).
	Dial transport.Dialer
	// Subsystems run while this member leads, after the built-in ones
	// (voter reconciler, join-token sweeper).
	Subsystems []Subsystem
}

// Manager is a running manager.
type Manager struct {
	Store *store.Store
	Raft  *raft.Node
	// Voters is the voter-set reconciler; it acts only while this member
	// leads, and serves removals then too.
	Voters    *rolemanager.VoterReconciler
	transport *transport.Transport
	leader    *leaderRunner
	log       *slog.Logger
	dial      transport.Dialer

	removed     chan struct{} // closed when a peer says this member was removed
	removedOnce sync.Once
	probeStop   chan struct{}
	probeDone   chan struct{}
}

// Open opens the raft state in cfg.RaftDir, rebuilds the store from it and
// starts the raft member.
func Open(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st := cfg.Store
	// The transport reports to the raft member, which needs the transport
	// to exist first: the reporter is filled in once the member is.
	reporter := &raftReporter{}
	m := &Manager{Store: st, log: cfg.Logger, dial: cfg.Dial, removed: make(chan struct{}),
		probeStop: make(chan struct{}), probeDone: make(chan struct{})}
	tr := transport.New(transport.Config{
		Raft:      reporter,
		Dial:      cfg.Dial,
		Logger:    cfg.Logger,
		OnRemoved: m.markRemoved,
	})
	n, err := raft.New(raft.Config{
		StateDir:         cfg.RaftDir,
		Sealer:           cfg.Sealer,
		Applier:          st,
		Transport:        tr,
		Logger:           cfg.Logger,
		SnapshotInterval: cfg.SnapshotInterval,
		TickInterval:     cfg.TickInterval,
	})
	if err != nil {
		tr.Stop()
		return nil, fmt.Errorf("open raft member: %w", err)
	}
	reporter.set(n)
	st.SetProposer(n)
	n.Start()
	voters := rolemanager.NewVoterReconciler(rolemanager.Config{Raft: n, Logger: cfg.Logger.With("component", "voter-reconciler")})
	m.Raft, m.Voters, m.transport = n, voters, tr
	m.leader = &leaderRunner{
		m: m,
		subsystems: append([]Subsystem{
			{Name: "voter-reconciler", Run: voters.Run},
			{Name: "join-token-sweeper", Run: func(ctx context.Context) {
				jointoken.RunSweeper(ctx, st, time.Minute, cfg.Logger.With("component", "join-token-sweeper"))
			}},
		}, cfg.Subsystems...),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go m.leader.loop()
	go func() {
		defer close(m.probeDone)
		m.probeRemoval(m.probeStop)
	}()
	return m, nil
}

// WaitReady returns once a leader is known and, when this member leads,
// everything committed before is applied to the store.
func (m *Manager) WaitReady(ctx context.Context) error {
	lead, err := m.Raft.WaitForLeader(ctx)
	if err != nil {
		return err
	}
	if lead == m.Raft.RaftID() {
		return m.Raft.Barrier(ctx)
	}
	return nil
}

// Stop stops the raft member and its transport. The store belongs to the
// caller.
func (m *Manager) Stop() error {
	close(m.leader.stop)
	<-m.leader.done
	close(m.probeStop)
	<-m.probeDone
	err := m.Raft.Stop()
	m.transport.Stop()
	return err
}

// raftReporter hands the transport's delivery reports to the raft member
// once it exists; reports before that have no one to inform.
type raftReporter struct {
	mu sync.Mutex
	n  *raft.Node
}

func (r *raftReporter) set(n *raft.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n = n
}

func (r *raftReporter) get() *raft.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *raftReporter) ReportUnreachable(id uint64) {
	if n := r.get(); n != nil {
		n.ReportUnreachable(id)
	}
}

func (r *raftReporter) ReportSnapshot(id uint64, status etcdraft.SnapshotStatus) {
	if n := r.get(); n != nil {
		n.ReportSnapshot(id, status)
	}
}

func (m *Manager) markRemoved() {
	m.removedOnce.Do(func() {
		m.log.Error("another manager says this one was removed from the cluster")
		close(m.removed)
	})
}

// Removed is closed when another manager refuses this member's raft
// traffic because it was removed from the cluster. (A member that applies
// its own removal stops with raft.ErrRemoved instead.)
func (m *Manager) Removed() <-chan struct{} { return m.removed }

// Cluster returns the cluster object, nil before ClusterInit is applied.
func (m *Manager) Cluster() *api.Cluster {
	var c *api.Cluster
	m.Store.View(func(tx store.ReadTx) { c = tx.Cluster() })
	return c
}
