package raft

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// TestOpenReplaysTheCommittedLog: a restarted member whose log holds
// committed entries past its snapshot applies them while it opens, before
// it serves or starts: its store holds every committed write and it is
// Replayed at once.
func TestOpenReplaysTheCommittedLog(t *testing.T) {
	h := newHarness(t)
	// One snapshot, after 100 entries, then about 20 past it: from the
	// log's first entry, the bootstrap's conf change, nothing replays.
	n := h.start(rafttest.NewKV(), 100)
	for i := range 120 {
		propose(t, n, fmt.Sprintf("k%03d", i), fmt.Sprint(i))
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	kv := rafttest.NewKV()
	reopened, err := New(Config{StateDir: h.dir, Sealer: h.sealer, Applier: kv, Logger: slog.New(slog.DiscardHandler),
		TickInterval: 10 * time.Millisecond, SnapshotInterval: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reopened.Stop() })
	if reopened.snapshotIndex >= reopened.applied.Load() {
		t.Fatalf("the test needs entries past the snapshot: snapshot at %d, applied %d", reopened.snapshotIndex, reopened.applied.Load())
	}
	if applied, commit, ok := reopened.Replayed(); !ok || applied != commit {
		t.Fatalf("opened, not started: Replayed = (%d, %d, %v), want the commit index applied", applied, commit, ok)
	}
	keys := kv.Len()
	if keys != 121 {
		t.Fatalf("opened with %d keys in the store, want all 121 the log had committed", keys)
	}
	// Started, it goes on from there: a new write applies once.
	reopened.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := reopened.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	propose(t, reopened, "k120", "120")
	if kv.Len() != 122 {
		t.Fatalf("%d keys after one more write, want 122", kv.Len())
	}
}

// TestReplayStopsAtAConfChange: the replay at open applies committed
// entries in order and stops before the first conf change (raft must
// apply that one itself) or an entry not committed; the rest is left to
// the Ready loop.
func TestReplayStopsAtAConfChange(t *testing.T) {
	normal := func(i uint64) raftpb.Entry { return raftpb.Entry{Type: raftpb.EntryNormal, Index: i, Term: 1} }
	for _, tc := range []struct {
		name   string
		ents   []raftpb.Entry
		commit uint64
		want   uint64
	}{
		{"all committed", []raftpb.Entry{normal(6), normal(7), normal(8)}, 8, 8},
		{"past the commit", []raftpb.Entry{normal(6), normal(7), normal(8)}, 7, 7},
		{"a conf change", []raftpb.Entry{normal(6), normal(7), {Type: raftpb.EntryConfChange, Index: 8, Term: 1}, normal(9)}, 9, 7},
		{"nothing to replay", nil, 5, 5},
	} {
		n := &Node{cfg: Config{Applier: rafttest.NewKV()}, wait: newWaitRegistry[error]()}
		n.applied.Store(5)
		if err := n.replayCommitted(tc.ents, tc.commit); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := n.applied.Load(); got != tc.want {
			t.Errorf("%s: applied %d after the replay, want %d", tc.name, got, tc.want)
		}
	}
}
