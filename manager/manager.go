// Package manager is the composition root of everything a manager runs
// (docs/design.md §8): the store, the raft member that replicates it and
// its transport, the gRPC services the daemon serves for it (services.go),
// and the leader subsystems (subsystems.go), which the leader runner
// (leader.go) starts when this member becomes leader and stops when it
// stops being one; they meet in the store and never call each other.
//
// The daemon (package node) opens a Manager when it has manager raft state
// and an open data key, and stops it at demotion or shutdown; a worker
// builds none.
package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/connpool"
	"github.com/jaco-project/jaco/internal/gcpace"
	"github.com/jaco-project/jaco/internal/metrics"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/events"
	"github.com/jaco-project/jaco/manager/rolemanager"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/raft/transport"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Dialer opens a lazy mutual-TLS connection to another node (grpc.NewClient:
// it must not block, the raft transport dials from the Ready loop).
type Dialer func(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error)

// Manager is a running manager.
type Manager struct {
	store     *store.Store
	raft      *raft.Node
	voters    *rolemanager.VoterReconciler
	transport *transport.Transport
	// raftService serves the other managers' raft messages.
	raftService *raft.Service
	leader      *leaderRunner
	services    map[string]any
	collector   metrics.Collectors
	admission   api.AdmissionServiceServer
	log         *slog.Logger
	dial        Dialer
	// forward holds the connections calls are forwarded to the leader on.
	forward          *connpool.Pool
	quorumLossWindow time.Duration

	removed     chan struct{} // closed when a peer says this member was removed
	removedOnce sync.Once
	// stopBackground ends the removal probe (and a call it has in
	// flight) and the garbage collector's pacer (which puts the
	// collector back); background waits for both.
	stopBackground context.CancelFunc
	background     sync.WaitGroup
	// events holds the changes this manager applied recently, which
	// recorder feeds from the store (docs/adr/0034-events.md).
	events   *events.Log
	recorder *events.Recorder
}

// Open opens the raft state in raftDir with sealer, rebuilds the store from
// it, and starts the raft member. dial reaches the other managers and, for
// replica logs, the other nodes.
func Open(raftDir string, sealer *encryption.Sealer, dial Dialer, opts ...Option) (*Manager, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	st := store.New(nil)
	m := &Manager{store: st, log: o.logger, dial: dial, quorumLossWindow: o.quorumLossWindow,
		removed: make(chan struct{})}
	m.forward = connpool.New(m.dialLeader)
	// The transport reports to the raft member, which needs the transport
	// to exist first: the reporter is filled in once the member is.
	reporter := &raftReporter{}
	tr := transport.New(transport.Config{
		Raft:       reporter,
		Dial:       func(addr string) (*grpc.ClientConn, error) { return dial(addr) },
		Logger:     o.logger,
		OnRemoved:  m.markRemoved,
		OnPeerLost: reporter.PeerLost,
	})
	n, err := raft.New(raft.Config{
		StateDir:         raftDir,
		Sealer:           sealer,
		Applier:          st,
		Transport:        tr,
		Logger:           o.logger,
		SnapshotInterval: o.snapshotInterval,
		TickInterval:     o.tickInterval,
	})
	if err != nil {
		tr.Stop()
		st.Close()
		return nil, fmt.Errorf("open raft member: %w", err)
	}
	reporter.set(n)
	st.SetProposer(n)
	// Recording starts before the member applies anything, so the log
	// misses no change; the entries it replays are left out (Record).
	_, openCommit, _ := n.Replayed()
	m.events = events.NewLog(events.DefaultCapacity, events.DefaultMaxAge, nil)
	m.recorder = events.Record(st, m.events, openCommit)
	n.Start()
	m.raft, m.transport = n, tr
	m.voters = rolemanager.NewVoterReconciler(rolemanager.Config{Raft: n, Logger: o.logger.With("component", "voter-reconciler")})
	subsystems := m.assemble(o)
	m.leader = newLeaderRunner(n, o.logger, subsystems)
	go m.leader.loop()
	var background context.Context
	background, m.stopBackground = context.WithCancel(context.Background())
	m.background.Go(func() { m.probeRemoval(background) })
	if o.gcHeadroom > 0 {
		m.background.Go(func() { gcpace.Run(background, o.gcHeadroom, gcpace.DefaultMaxPercent) })
	}
	return m, nil
}

// WaitReady returns once a leader is known and, when this member leads,
// everything committed before is applied to the store.
func (m *Manager) WaitReady(ctx context.Context) error {
	lead, err := m.raft.WaitForLeader(ctx)
	if err != nil {
		return err
	}
	if lead == m.raft.RaftID() {
		return m.raft.Barrier(ctx)
	}
	return nil
}

// HandOver gives leadership to another active voter when this manager
// leads: called before the node stops, so that writes and the agents'
// sessions move over at once (raft.Node.HandOver). Bounded by ctx; a
// failed hand-over is logged, and the node stops anyway.
func (m *Manager) HandOver(ctx context.Context) {
	to, err := m.raft.HandOver(ctx)
	switch {
	case err != nil:
		m.log.Warn("stopping without handing leadership over", "err", err)
	case to != 0:
		m.log.Info("leadership handed over before stopping", "to", fmt.Sprintf("%x", to))
	}
}

// EndRaftStreams ends the other managers' raft message streams into this
// one, and refuses new ones: a stopping daemon calls it before its
// servers' graceful stop, which would wait for the streams (their senders
// keep them open for good; docs/adr/0048).
func (m *Manager) EndRaftStreams() { m.raftService.EndStreams() }

// Stop stops the leader subsystems, the raft member and its transport,
// closes the connections to the leader and the store's watches.
func (m *Manager) Stop() error {
	m.leader.stop()
	<-m.leader.done
	m.stopBackground()
	m.background.Wait()
	m.recorder.Stop()
	m.events.Close() // ends the event streams
	m.raftService.EndStreams()
	err := m.raft.Stop()
	m.transport.Stop()
	m.forward.CloseAll()
	m.store.Close()
	return err
}

// Done is closed when the raft member stops: Stop, a failure, or this
// member applying its own removal (Err is then ErrRemoved).
func (m *Manager) Done() <-chan struct{} { return m.raft.Done() }

// Err is why the raft member stopped, once Done is closed.
func (m *Manager) Err() error { return m.raft.Err() }

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

// PeerLost tells the member a peer's connection broke (ADR 0029).
func (r *raftReporter) PeerLost(id uint64) {
	if n := r.get(); n != nil {
		n.PeerLost(id)
	}
}

func (m *Manager) markRemoved() {
	m.removedOnce.Do(func() {
		// INFO: a demotion is told so too; the node then asks the leader
		// and runs on as a worker, or stops with node_removed.
		m.log.Info("another manager says this one was removed from the cluster")
		close(m.removed)
	})
}

// Removed is closed when another manager refuses this member's raft
// traffic because it was removed from the cluster. (A member that applies
// its own removal stops with ErrRemoved instead.)
func (m *Manager) Removed() <-chan struct{} { return m.removed }
