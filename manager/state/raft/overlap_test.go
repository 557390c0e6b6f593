package raft

import (
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A Ready's committed entries are applied beside its fsync only when
// nothing else in it depends on them: a snapshot replaces the state they
// apply to, and a conf change decides whom the Ready's messages reach.
func TestOverlapApplyOnlyPlainWritesBesideAnFsync(t *testing.T) {
	write := raftpb.Entry{Type: raftpb.EntryNormal, Index: 7, Data: []byte{1}}
	snap := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 5, Term: 1}}
	for _, tc := range []struct {
		name string
		rd   raft.Ready
		want bool
	}{
		{"writes beside an fsync", raft.Ready{MustSync: true, CommittedEntries: []raftpb.Entry{write, write}}, true},
		{"no fsync to overlap", raft.Ready{CommittedEntries: []raftpb.Entry{write}}, false},
		{"nothing committed", raft.Ready{MustSync: true}, false},
		{"a snapshot", raft.Ready{MustSync: true, Snapshot: snap, CommittedEntries: []raftpb.Entry{write}}, false},
		{"a conf change", raft.Ready{MustSync: true, CommittedEntries: []raftpb.Entry{write, {Type: raftpb.EntryConfChange, Index: 8}}}, false},
		{"a conf change v2", raft.Ready{MustSync: true, CommittedEntries: []raftpb.Entry{{Type: raftpb.EntryConfChangeV2, Index: 8}}}, false},
	} {
		if got := overlapApply(tc.rd); got != tc.want {
			t.Errorf("%s: overlapApply = %v, want %v", tc.name, got, tc.want)
		}
	}
}
