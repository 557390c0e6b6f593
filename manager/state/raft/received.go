package raft

import (
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
)

// decodedSnapshot is a snapshot a peer sent, decoded as it arrived:
// stream.go decodes it to refuse one that does not decode before raft
// takes it in, and the Ready that installs it (restoreSnapshot) uses that
// decoding instead of decoding the same bytes again. A follower catching
// up on a large store spent as long again decoding as installing (issue
// 15).
type decodedSnapshot struct {
	index, term uint64
	rs          *api.RaftSnapshot
}

// keepDecoded keeps rs, the decoding of the snapshot described by meta,
// for the Ready that installs it. Only the newest is kept.
func (n *Node) keepDecoded(meta raftpb.SnapshotMetadata, rs *api.RaftSnapshot) {
	n.decoded.Store(&decodedSnapshot{index: meta.Index, term: meta.Term, rs: rs})
}

// takeDecoded returns the kept decoding of the snapshot described by
// meta, and forgets it; nil when none is kept for it.
func (n *Node) takeDecoded(meta raftpb.SnapshotMetadata) *api.RaftSnapshot {
	d := n.decoded.Load()
	if d == nil || d.index != meta.Index || d.term != meta.Term {
		return nil
	}
	n.decoded.CompareAndSwap(d, nil)
	return d.rs
}

// dropStaleDecoded forgets a kept decoding this member has applied up to
// or past: raft refused that snapshot or installed another, and will not
// install it now. A decoded store is several times its encoding; one left
// behind would hold that for nothing.
func (n *Node) dropStaleDecoded() {
	if d := n.decoded.Load(); d != nil && d.index <= n.applied.Load() {
		n.decoded.CompareAndSwap(d, nil)
	}
}
