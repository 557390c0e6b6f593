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

// A leader counts its own copy of an entry only once it is persisted:
// raft acknowledges it to itself after the Ready appending it is handled
// (Advance), so no Ready carries as committed a leader's entry it also
// appends. Applying beside the fsync (overlapApply) relies on it: a lone
// voter, its own quorum, would otherwise answer a proposer before any
// disk held the write. Checked here so that a raft upgrade changing it
// fails a test.
func TestLeaderCommitsOnlyWhatItPersisted(t *testing.T) {
	ms := raft.NewMemoryStorage()
	if err := ms.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{
		Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}}); err != nil {
		t.Fatal(err)
	}
	rn, err := raft.NewRawNode(&raft.Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256})
	if err != nil {
		t.Fatal(err)
	}
	advance := func(rd raft.Ready) {
		if !raft.IsEmptyHardState(rd.HardState) {
			if err := ms.SetHardState(rd.HardState); err != nil {
				t.Fatal(err)
			}
		}
		if err := ms.Append(rd.Entries); err != nil {
			t.Fatal(err)
		}
		rn.Advance(rd)
	}
	if err := rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	for rn.HasReady() {
		advance(rn.Ready())
	}
	if err := rn.Propose([]byte("write")); err != nil {
		t.Fatal(err)
	}
	rd := rn.Ready()
	if len(rd.Entries) != 1 {
		t.Fatalf("the proposal's Ready appends %v, want the one entry", rd.Entries)
	}
	index := rd.Entries[0].Index
	for _, e := range rd.CommittedEntries {
		if e.Index >= index {
			t.Fatalf("the Ready appending entry %d carries it as committed: a lone voter would answer its proposer before its fsync", index)
		}
	}
	advance(rd)
	next := rn.Ready()
	if n := len(next.CommittedEntries); n == 0 || next.CommittedEntries[n-1].Index != index {
		t.Fatalf("after the append was handled, committed %v, want entry %d", next.CommittedEntries, index)
	}
}
