package raft

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// New opens the raft state in cfg.StateDir, rebuilds the applier from the
// newest snapshot, and prepares the member. Start runs it.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	opened := time.Now()
	if err := refuseLostEntries(cfg.StateDir); err != nil {
		return nil, err
	}
	disk, st, err := storage.Open(cfg.StateDir, cfg.Sealer, storage.Options{
		KeepOldSnapshots: cfg.KeepOldSnapshots,
		Logger:           cfg.Logger,
	})
	if errors.Is(err, storage.ErrLostAcknowledged) {
		return nil, fmt.Errorf("%w; %s", err, lostEntriesRunbook(""))
	}
	if err != nil {
		return nil, err
	}
	meta, err := decodeWALMetadata(cfg.StateDir, st.Metadata)
	if err != nil {
		disk.Close()
		return nil, err
	}
	n := &Node{
		cfg:             cfg,
		raftID:          meta.RaftId,
		nodeID:          meta.NodeId,
		clusterID:       meta.ClusterId,
		mem:             raft.NewMemoryStorage(),
		disk:            disk,
		wait:            newWaitRegistry[error](),
		proposed:        newProposed(),
		readIndexes:     newWaitRegistry[uint64](),
		members:         newMembership(),
		metrics:         newNodeMetrics(),
		leaderChanged:   make(chan struct{}),
		leaderlessSince: time.Now(),
		openCommit:      st.HardState.Commit,
		stop:            make(chan struct{}),
		rekeyC:          make(chan rekeyRequest),
		lostC:           make(chan uint64, 1),
		fatal:           make(chan error, 1),
		done:            make(chan struct{}),
	}
	for _, p := range meta.JoinPeers {
		n.addPeer(p)
	}
	n.leaderContact.Store(time.Now().UnixNano())
	read := time.Now()
	if !raft.IsEmptySnap(st.Snapshot) {
		if err := n.restoreSnapshot(st.Snapshot); err != nil {
			disk.Close()
			return nil, err
		}
	}
	if err := n.mem.SetHardState(st.HardState); err != nil {
		disk.Close()
		return nil, fmt.Errorf("load hard state: %w", err)
	}
	n.term = st.HardState.Term
	if err := n.mem.Append(st.Entries); err != nil {
		disk.Close()
		return nil, fmt.Errorf("load entries: %w", err)
	}
	restored := time.Now()
	if err := n.replayCommitted(st.Entries, st.HardState.Commit); err != nil {
		disk.Close()
		return nil, err
	}
	cfg.Logger.Info("raft state loaded", "snapshot_index", st.Snapshot.Metadata.Index,
		"snapshot_bytes", len(st.Snapshot.Data), "entries", len(st.Entries),
		"replayed", n.applied.Load()-st.Snapshot.Metadata.Index,
		"read", read.Sub(opened).Round(time.Millisecond),
		"restore", restored.Sub(read).Round(time.Millisecond),
		"replay", time.Since(restored).Round(time.Millisecond))
	n.rn = raft.RestartNode(&raft.Config{
		ID:                        n.raftID,
		ElectionTick:              cfg.ElectionTick,
		HeartbeatTick:             cfg.HeartbeatTick,
		Storage:                   n.mem,
		Applied:                   n.applied.Load(),
		MaxSizePerMsg:             maxSizePerMsg,
		MaxInflightMsgs:           maxInflightMsgs,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
		Logger:                    raftLogger{cfg.Logger.With("component", "raft")},
	})
	return n, nil
}

// restoreSnapshot loads a snapshot into the applier, members and memory
// storage. Used at start and when the leader sends one.
func (n *Node) restoreSnapshot(snap raftpb.Snapshot) error {
	rs := n.takeDecoded(snap.Metadata)
	if rs == nil {
		var err error
		if rs, err = decodeSnapshot(snap.Data); err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.Metadata.Index, err)
		}
	}
	if err := n.cfg.Applier.Restore(rs.Store, snap.Metadata.Index); err != nil {
		return fmt.Errorf("restore store from snapshot %d: %w", snap.Metadata.Index, err)
	}
	n.members.reset(rs.Members, rs.RemovedMembers)
	for _, m := range rs.Members {
		n.addPeer(m)
	}
	if err := n.mem.ApplySnapshot(withoutData(snap)); err != nil {
		return fmt.Errorf("apply snapshot %d to raft log: %w", snap.Metadata.Index, err)
	}
	n.confState = snap.Metadata.ConfState
	n.applied.Store(snap.Metadata.Index)
	n.snapshotIndex = snap.Metadata.Index
	n.snapshotBytes, n.logBytes = len(snap.Data), 0
	return nil
}
