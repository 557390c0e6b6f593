package raft

import (
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// The newest snapshot's data stays on disk, not in raft's MemoryStorage,
// which holds only its metadata: the data is as large as the store (49 MB
// for 440 000 join tokens; docs/adr/0050) and is needed only when a follower
// is too far behind for the log. raft then asks the storage for the
// snapshot and emits a MsgSnap without data; sendSnapshots reads the data
// back from the snapshot file on a goroutine of its own, so the Ready
// loop does not wait on the read, and hands the message to the transport
// once it is complete. raft keeps that follower paused until it hears how
// the snapshot went (ReportSnapshot), so nothing else to it is held back.

// withoutData is snap with its metadata only, as the MemoryStorage keeps
// it.
func withoutData(snap raftpb.Snapshot) raftpb.Snapshot {
	return raftpb.Snapshot{Metadata: snap.Metadata}
}

// sendSnapshots starts filling and sending each MsgSnap of msgs whose
// snapshot has no data, and returns the other messages, in their order.
func (n *Node) sendSnapshots(msgs []raftpb.Message) []raftpb.Message {
	if !slices.ContainsFunc(msgs, lacksData) {
		return msgs // the common case: no copy
	}
	rest := make([]raftpb.Message, 0, len(msgs))
	for _, m := range msgs {
		if lacksData(m) {
			n.sendSnapshot(m)
		} else {
			rest = append(rest, m)
		}
	}
	return rest
}

// lacksData tells a MsgSnap raft emitted from the memory storage, whose
// snapshot is metadata only.
func lacksData(m raftpb.Message) bool {
	return m.Type == raftpb.MsgSnap && m.Snapshot != nil && len(m.Snapshot.Data) == 0
}

// sendSnapshot reads m's snapshot data from disk and sends m with it, on a
// goroutine run waits for. A snapshot that cannot be read (a newer one
// replaced it meanwhile, or the data key changed) is reported failed:
// raft sends the newest one next time.
func (n *Node) sendSnapshot(m raftpb.Message) {
	n.snapshotSends.Add(1)
	go func() {
		defer n.snapshotSends.Done()
		data, err := n.disk.ReadSnapshot(m.Snapshot.Metadata)
		if err != nil {
			n.cfg.Logger.Warn("raft snapshot not sent", "to", m.To, "index", m.Snapshot.Metadata.Index, "err", err)
			n.rn.ReportSnapshot(m.To, raft.SnapshotFailure)
			return
		}
		snap := *m.Snapshot
		snap.Data = data
		m.Snapshot = &snap
		n.cfg.Transport.Send([]raftpb.Message{m})
	}()
}
