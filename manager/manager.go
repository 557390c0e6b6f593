// Package manager composes what a manager runs: the store, the raft member
// that replicates it, and the services that read and write it.
//
// Leader-only subsystems (scheduler, orchestrators, CA signer, ...) will
// plug in here, started when this member becomes leader and stopped when it
// stops being one; they meet in the store and never call each other.
package manager

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
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
}

// Manager is a running manager.
type Manager struct {
	Store *store.Store
	Raft  *raft.Node
	log   *slog.Logger
}

// Open opens the raft state in cfg.RaftDir, rebuilds the store from it and
// starts the raft member.
func Open(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st := cfg.Store
	n, err := raft.New(raft.Config{
		StateDir:         cfg.RaftDir,
		Sealer:           cfg.Sealer,
		Applier:          st,
		Logger:           cfg.Logger,
		SnapshotInterval: cfg.SnapshotInterval,
		TickInterval:     cfg.TickInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("open raft member: %w", err)
	}
	st.SetProposer(n)
	n.Start()
	return &Manager{Store: st, Raft: n, log: cfg.Logger}, nil
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

// Stop stops the raft member. The store belongs to the caller.
func (m *Manager) Stop() error {
	return m.Raft.Stop()
}

// Cluster returns the cluster object, nil before ClusterInit is applied.
func (m *Manager) Cluster() *api.Cluster {
	var c *api.Cluster
	m.Store.View(func(tx store.ReadTx) {
		if cs := tx.ListClusters(); len(cs) > 0 {
			c = cs[0]
		}
	})
	return c
}
