package raft

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// slowDump is a KV whose first snapshot dump waits for release, as
// encoding a large store takes seconds.
type slowDump struct {
	*rafttest.KV
	once     sync.Once
	started  chan struct{}
	released chan struct{}
}

func (s *slowDump) Freeze() func() api.FrozenStore {
	dump := s.KV.Freeze()
	first := false
	s.once.Do(func() { first = true })
	return func() api.FrozenStore {
		if first {
			close(s.started)
			<-s.released
		}
		return dump()
	}
}

// TestWritesGoOnWhileASnapshotIsWritten: a snapshot being encoded does not
// hold up commits (before, it ran on the Ready loop: every write, and the
// heartbeats, waited for it); once written it is what a restart begins
// from, with the writes made meanwhile replayed from the WAL.
func TestWritesGoOnWhileASnapshotIsWritten(t *testing.T) {
	h := newHarness(t)
	kv := &slowDump{KV: rafttest.NewKV(), started: make(chan struct{}), released: make(chan struct{})}
	n, err := New(Config{StateDir: h.dir, Sealer: h.sealer, Applier: kv, TickInterval: 10 * time.Millisecond,
		SnapshotInterval: 5, LogEntriesForSlowFollowers: 2})
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		propose(t, n, fmt.Sprintf("a%d", i), "x")
	}
	select {
	case <-kv.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot started after 6 entries with an interval of 5")
	}
	for i := range 20 {
		propose(t, n, fmt.Sprintf("b%02d", i), fmt.Sprint(i))
	}
	if snaps, _ := filepath.Glob(filepath.Join(h.dir, "snap", "*.snap")); len(snaps) != 0 {
		t.Fatalf("snapshot files %v before the dump finished", snaps)
	}
	close(kv.released)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if snaps, _ := filepath.Glob(filepath.Join(h.dir, "snap", "*.snap")); len(snaps) != 1 {
		t.Fatalf("snapshot files = %v after stop, want the one written", snaps)
	}
	kv2 := rafttest.NewKV()
	h.start(kv2, 5)
	if kv2.Len() != 26 {
		t.Fatalf("restarted store has %d keys, want 26", kv2.Len())
	}
	if v, _ := kv2.Get("b19"); v != "19" {
		t.Fatalf("b19 = %q after restart, want 19", v)
	}
}

// TestSnapshotDue: every SnapshotInterval entries while snapshots are
// small; once large, not before the log since the last outweighs it; and
// whenever the log outweighs both the snapshot and 1 MiB.
func TestSnapshotDue(t *testing.T) {
	thirdOf4 := []uint64{9, 3, 5, 1} // two lower ids than 5
	for _, tc := range []struct {
		name                    string
		applied, snapIndex      uint64
		snapshotBytes, logBytes int
		want                    bool
		voters                  []uint64 // beside this member, raft id 5
		staggerNext             bool
		staggerFrom             uint64
	}{
		{"interval not reached", 109, 100, 0, 1<<20 - 1, false, nil, false, 0},
		{"interval reached, small snapshot", 110, 100, 1<<20 - 1, 10, true, nil, false, 0},
		{"interval reached, 1 MiB snapshot, light log", 110, 100, 1 << 20, 10, false, nil, false, 0},
		{"large snapshot, light log", 50_000, 100, 100 << 20, 99 << 20, false, nil, false, 0},
		{"large snapshot, log as heavy", 50_000, 100, 100 << 20, 100 << 20, true, nil, false, 0},
		{"heavy log, interval not reached", 105, 100, 100 << 20, 200 << 20, true, nil, false, 0},
		{"log past 1 MiB, small snapshot, interval not reached", 105, 100, 1 << 10, 1 << 20, true, nil, false, 0},
		{"log under 1 MiB, no snapshot, interval not reached", 105, 100, 0, 1<<20 - 1, false, nil, false, 0},
		// This member (raft id 5) is third of four voters: once, it
		// waits for a log 1 + 2/4 times as heavy as its snapshot.
		{"third voter, staggered, log as heavy", 50_000, 100, 100 << 20, 100 << 20, false, thirdOf4, true, 0},
		{"third voter, staggered, log 1.49 times as heavy", 50_000, 100, 100 << 20, 149 << 20, false, thirdOf4, true, 0},
		{"third voter, staggered, log 1.5 times as heavy", 50_000, 100, 100 << 20, 150 << 20, true, thirdOf4, true, 0},
		{"third voter, offset kept, log as heavy", 50_000, 100, 100 << 20, 100 << 20, true, thirdOf4, false, 0},
		{"third voter, log past 1 MiB, small snapshot", 105, 100, 1 << 10, 1 << 20, true, thirdOf4, true, 0},
		// From the leader with raft id 3, second of the four: one rank
		// apart, 1 + 1/4 times; from leader 9, fourth, three ranks apart
		// the other way round, 1 + 3/4 times.
		{"after leader 3's snapshot, log 1.24 times as heavy", 50_000, 100, 100 << 20, 124 << 20, false, thirdOf4, true, 3},
		{"after leader 3's snapshot, log 1.25 times as heavy", 50_000, 100, 100 << 20, 125 << 20, true, thirdOf4, true, 3},
		{"after leader 9's snapshot, log 1.74 times as heavy", 50_000, 100, 100 << 20, 174 << 20, false, thirdOf4, true, 9},
		{"after leader 9's snapshot, log 1.75 times as heavy", 50_000, 100, 100 << 20, 175 << 20, true, thirdOf4, true, 9},
	} {
		n := &Node{cfg: Config{SnapshotInterval: 10}, snapshotIndex: tc.snapIndex,
			snapshotBytes: tc.snapshotBytes, logBytes: tc.logBytes, raftID: 5,
			staggerNext: tc.staggerNext, staggerFrom: tc.staggerFrom}
		n.confState.Voters = tc.voters
		n.applied.Store(tc.applied)
		if got := n.snapshotDue(); got != tc.want {
			t.Errorf("%s: due %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestKeptFrom: behind a snapshot the log keeps its newest entries up to
// a byte bound, so a few big batches do not hold the heap as 500 small
// writes would.
func TestKeptFrom(t *testing.T) {
	ents := func(sizes ...int) []raftpb.Entry {
		out := make([]raftpb.Entry, len(sizes))
		for i, n := range sizes {
			out[i] = raftpb.Entry{Index: uint64(11 + i), Data: make([]byte, n)}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ents []raftpb.Entry
		want uint64
	}{
		{"all fit", ents(10, 10, 10), 10},
		{"exactly the bound", ents(40, 30, 30), 10},
		{"the oldest goes", ents(41, 30, 30), 11},
		{"only the newest fit", ents(50, 50, 60, 40), 12},
		{"the newest alone is too big", ents(10, 101), 12},
		{"nothing to keep", nil, 10},
	} {
		if got := keptFrom(10, tc.ents, 100); got != tc.want {
			t.Errorf("%s: compact to %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCompactBehindBoundsBytes: behind a snapshot the in-memory log keeps
// no more than keptLogBytes, also while the snapshot's index is below
// LogEntriesForSlowFollowers (a young cluster creating a big service);
// small entries are all kept.
func TestCompactBehindBoundsBytes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int
		wantFirst uint64
	}{
		// Ten 2 MiB entries: the newest four fit in 8 MiB.
		{"big entries", 2 << 20, 7},
		{"small entries", 100, 1},
	} {
		n := &Node{cfg: Config{LogEntriesForSlowFollowers: 500}, mem: raft.NewMemoryStorage()}
		var ents []raftpb.Entry
		for i := uint64(1); i <= 10; i++ {
			ents = append(ents, raftpb.Entry{Index: i, Term: 1, Data: make([]byte, tc.size)})
		}
		if err := n.mem.Append(ents); err != nil {
			t.Fatal(err)
		}
		if err := n.compactBehind(10); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if first, _ := n.mem.FirstIndex(); first != tc.wantFirst {
			t.Errorf("%s: log starts at %d after compaction, want %d", tc.name, first, tc.wantFirst)
		}
	}
}

// TestSnapshotWriteFailureStopsTheMember: a snapshot that cannot be
// written stops the member with the cause, as it did when written on the
// loop, rather than leaving it running with a log that never shrinks.
func TestSnapshotWriteFailureStopsTheMember(t *testing.T) {
	h := newHarness(t)
	n := h.start(rafttest.NewKV(), 5)
	snapDir := filepath.Join(h.dir, "snap")
	if err := os.RemoveAll(snapDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snapDir, nil, 0o600); err != nil { // a file where the directory was
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 10 {
		if err := n.Propose(ctx, rafttest.Put(fmt.Sprintf("k%d", i), "v")); err != nil {
			break // the member stopped under the proposal
		}
	}
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the member runs on after its snapshot could not be written")
	}
	if err := n.Err(); err == nil || !strings.Contains(err.Error(), "snap") {
		t.Fatalf("member stopped with %v, want the snapshot write's error", err)
	}
}
