package raft

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// applyEntry applies one committed entry. Errors returned here are fatal
// to the member (an entry it cannot decode); a store's rejection of a batch
// is a normal outcome handed to the proposer.
func (n *Node) applyEntry(e raftpb.Entry) error {
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) > 0 {
			var req api.InternalRaftRequest
			if err := proto.Unmarshal(e.Data, &req); err != nil {
				return fmt.Errorf("decode entry %d: %w", e.Index, err)
			}
			n.wait.trigger(req.Id, n.cfg.Applier.Apply(e.Index, &req))
		}
	case raftpb.EntryConfChange:
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return fmt.Errorf("decode conf change %d: %w", e.Index, err)
		}
		if err := n.applyConfChange(cc); err != nil {
			return fmt.Errorf("conf change %d: %w", e.Index, err)
		}
		// Woken after Advance, not now: raft drops a conf change proposed
		// while it still counts the previous one as unapplied.
		n.appliedConfChanges = append(n.appliedConfChanges, cc.ID)
	case raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeV2
		if err := cc.Unmarshal(e.Data); err != nil {
			return fmt.Errorf("decode conf change %d: %w", e.Index, err)
		}
		if err := n.applyConfChange(cc); err != nil {
			return fmt.Errorf("conf change %d: %w", e.Index, err)
		}
	}
	n.appliedIndex = e.Index
	return nil
}

// applyConfChange hands cc to raft and mirrors it in the member list. The
// context of an add is the new member's api.RaftMember.
func (n *Node) applyConfChange(cc raftpb.ConfChangeI) error {
	n.confState = *n.rn.ApplyConfChange(cc)
	v2 := cc.AsV2()
	for _, ch := range v2.Changes {
		switch ch.Type {
		case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode:
			var m api.RaftMember
			if err := proto.Unmarshal(v2.Context, &m); err != nil {
				return fmt.Errorf("decode member context: %w", err)
			}
			m.RaftId = ch.NodeID
			n.members.add(&m)
			n.addPeer(&m)
			// A newcomer with an empty log catches up from a snapshot once
			// the log it needs is compacted; raft ignores a snapshot whose
			// configuration lacks the receiver, so take one that has it.
			if n.snapshotIndex > 0 {
				n.snapshotNow = true
			}
		case raftpb.ConfChangeRemoveNode:
			n.members.remove(ch.NodeID)
			if n.cfg.Transport != nil && ch.NodeID != n.raftID {
				n.cfg.Transport.RemovePeer(ch.NodeID)
			}
			if ch.NodeID == n.raftID {
				n.removedSelf = true
			}
		}
	}
	return nil
}

// maybeSnapshot snapshots the applied state every SnapshotInterval entries
// and compacts the in-memory log behind it.
func (n *Node) maybeSnapshot() error {
	if !n.snapshotNow && n.appliedIndex-n.snapshotIndex < n.cfg.SnapshotInterval {
		return nil
	}
	n.snapshotNow = false
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(&api.RaftSnapshot{
		Store:          n.cfg.Applier.Save(),
		Members:        n.members.list(),
		RemovedMembers: n.members.removedList(),
	})
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	snap, err := n.mem.CreateSnapshot(n.appliedIndex, &n.confState, data)
	if err != nil {
		return fmt.Errorf("create snapshot at %d: %w", n.appliedIndex, err)
	}
	if err := n.disk.SaveSnapshot(snap); err != nil {
		return err
	}
	n.snapshotIndex = n.appliedIndex
	if n.appliedIndex > n.cfg.LogEntriesForSlowFollowers {
		if err := n.mem.Compact(n.appliedIndex - n.cfg.LogEntriesForSlowFollowers); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("compact raft log: %w", err)
		}
	}
	n.cfg.Logger.Info("raft snapshot taken", "index", n.appliedIndex)
	return nil
}

// addPeer tells the transport where another member is.
func (n *Node) addPeer(m *api.RaftMember) {
	if n.cfg.Transport == nil || m.RaftId == n.raftID {
		return
	}
	if err := n.cfg.Transport.AddPeer(m.RaftId, m.Address); err != nil {
		n.cfg.Logger.Warn("add raft peer", "raft_id", fmt.Sprintf("%x", m.RaftId), "address", m.Address, "err", err)
	}
}
