package manager

import (
	"context"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/events"
	"github.com/jaco-project/jaco/manager/state/store"
)

// What the daemon reads of its manager: who this member is, who leads,
// the cluster object, and the raft members. The raft member and the store
// themselves stay inside the manager.

// ClusterID is the id of this member's cluster.
func (m *Manager) ClusterID() string { return m.raft.ClusterID() }

// NodeID is the node id of this member.
func (m *Manager) NodeID() string { return m.raft.NodeID() }

// RaftID is this member's raft id.
func (m *Manager) RaftID() uint64 { return m.raft.RaftID() }

// RaftMembers are the raft group's members, sorted by raft id.
func (m *Manager) RaftMembers() []*api.RaftMember { return m.raft.Members() }

// HasLeader reports whether this member knows a leader now.
func (m *Manager) HasLeader() bool {
	lead, _ := m.raft.Leader()
	return lead != 0
}

// Replayed reports whether this member has applied everything its log
// held as committed when it opened: until then its member list and store
// are older than what it recorded before it stopped.
func (m *Manager) Replayed() bool {
	_, _, ok := m.raft.Replayed()
	return ok
}

// IsVoter reports whether this member is a voter.
func (m *Manager) IsVoter() bool { return m.raft.IsVoter(m.raft.RaftID()) }

// IsRemovedNode reports whether the node's raft member was removed from
// the group (its raft traffic is refused with node_removed).
func (m *Manager) IsRemovedNode(nodeID string) bool { return m.raft.IsRemovedNode(nodeID) }

// Rekey rewrites the raft log and snapshots under sealer's current key
// (autolock turned on: the data key that lay in clear is retired).
func (m *Manager) Rekey(ctx context.Context, sealer *encryption.Sealer) error {
	return m.raft.Rekey(ctx, sealer)
}

// Cluster returns the cluster object, nil before ClusterInit is applied.
func (m *Manager) Cluster() *api.Cluster {
	var c *api.Cluster
	m.store.View(func(tx store.ReadTx) { c = tx.Cluster() })
	return c
}

// OperatorTokenValid reports whether t is the operator token of this
// member's cluster. Every operator call over TCP asks: the stored
// cluster's hash is read in place rather than the cluster cloned
// (docs/adr/0031-stored-objects-shared-read-only.md).
func (m *Manager) OperatorTokenValid(t token.Token) bool {
	valid := false
	m.store.View(func(tx store.ReadTx) {
		if c := tx.ClusterShared(); c != nil {
			valid = token.HashMatches(c.GetOperatorTokenHash(), t)
		}
	})
	return valid
}

// Node returns the node with id, nil when the store holds none.
func (m *Manager) Node(id string) *api.Node {
	var n *api.Node
	m.store.View(func(tx store.ReadTx) { n = tx.GetNode(id) })
	return n
}

// ClusterChanged receives once for each change of the cluster object and
// each reset of the store from a snapshot, until ctx ends or the manager
// stops (then the channel is closed). The caller must keep receiving, as
// from a store watch. It carries no store event: its reader (the daemon's
// autolock loop, node/keyring) reads the cluster object afresh each time,
// and so depends on the manager alone, not on the store's types.
func (m *Manager) ClusterChanged(ctx context.Context) <-chan struct{} {
	events := m.store.Watch(ctx, store.Any(store.ObjectType[*api.Cluster](), store.ByKind(store.EventReset)))
	changed := make(chan struct{})
	// Ends when the watch closes (ctx ended or the store closed) or ctx
	// ends while a change waits to be received.
	go func() {
		defer close(changed)
		for range events {
			select {
			case changed <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return changed
}

// View calls fn with a read transaction on this member's store: one
// consistent view, for readers such as the dashboard that show many
// objects together. fn must not keep the transaction.
func (m *Manager) View(fn func(tx store.ReadTx)) { m.store.View(fn) }

// EventLog is the ring of changes this member applied recently, the one
// `jaco events` streams from (docs/adr/0034-events.md).
func (m *Manager) EventLog() *events.Log { return m.events }

// RaftIndexes are this member's raft commit index and the index it has
// applied to the store.
func (m *Manager) RaftIndexes() (commit, applied uint64) {
	st := m.raft.Status()
	return st.Commit, st.Applied
}
