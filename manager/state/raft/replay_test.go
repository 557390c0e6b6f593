package raft

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// TestReplayedOnlyOnceTheOpenCommitIsApplied: a restarted member whose
// log holds committed entries past its snapshot is not Replayed until its
// applier holds them, so reads served meanwhile cannot go backwards; once
// it has applied them it is.
func TestReplayedOnlyOnceTheOpenCommitIsApplied(t *testing.T) {
	h := newHarness(t)
	n := h.start(rafttest.NewKV(), 1000)
	for i := range 12 {
		propose(t, n, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	kv := rafttest.NewKV()
	reopened, err := New(Config{StateDir: h.dir, Sealer: h.sealer, Applier: kv, Logger: slog.New(slog.DiscardHandler),
		TickInterval: 10 * time.Millisecond, SnapshotInterval: 1000})
	if err != nil {
		t.Fatal(err)
	}
	applied, commit, ok := reopened.Replayed()
	if ok || applied >= commit {
		t.Fatalf("opened, not started: Replayed = (%d, %d, %v), want the applied index below the commit index and false", applied, commit, ok)
	}
	if kv.Len() == 13 {
		t.Fatal("the test needs entries past the snapshot: the store already holds every key")
	}
	reopened.Start()
	t.Cleanup(func() { reopened.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, ok := reopened.Replayed(); ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("never Replayed after start")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if kv.Len() != 13 {
		t.Fatalf("Replayed with %d keys in the store, want all 13 the log had committed", kv.Len())
	}
}
