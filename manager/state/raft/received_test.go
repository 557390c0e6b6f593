package raft

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
)

// The decoding kept from a peer's message serves the install of that
// snapshot only (same index and term), and only once.
func TestDecodedSnapshotServesItsOwnInstallOnce(t *testing.T) {
	var n Node
	rs := &api.RaftSnapshot{Members: []*api.RaftMember{{RaftId: 7}}}
	n.keepDecoded(raftpb.SnapshotMetadata{Index: 10, Term: 2}, rs)
	if got := n.takeDecoded(raftpb.SnapshotMetadata{Index: 10, Term: 3}); got != nil {
		t.Fatal("a snapshot of another term took the kept decoding")
	}
	if got := n.takeDecoded(raftpb.SnapshotMetadata{Index: 11, Term: 2}); got != nil {
		t.Fatal("a snapshot at another index took the kept decoding")
	}
	if got := n.takeDecoded(raftpb.SnapshotMetadata{Index: 10, Term: 2}); got != rs {
		t.Fatalf("its own snapshot got %v, want the kept decoding", got)
	}
	if got := n.takeDecoded(raftpb.SnapshotMetadata{Index: 10, Term: 2}); got != nil {
		t.Fatal("the kept decoding was taken twice")
	}
}

// A kept decoding the member has applied past (raft refused that
// snapshot, or installed a newer one) is let go at the end of a Ready;
// one still ahead of it stays.
func TestStaleDecodedSnapshotIsDropped(t *testing.T) {
	var n Node
	meta := raftpb.SnapshotMetadata{Index: 10, Term: 2}
	n.keepDecoded(meta, &api.RaftSnapshot{})
	n.applied.Store(9)
	n.dropStaleDecoded()
	if n.decoded.Load() == nil {
		t.Fatal("a decoding ahead of the applied index was dropped")
	}
	n.applied.Store(10)
	n.dropStaleDecoded()
	if got := n.takeDecoded(meta); got != nil {
		t.Fatal("a decoding the member applied past was kept")
	}
}
