package raft

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// A running member rekeyed to a new data key keeps committing, and after a
// restart its state opens with the new key alone, all of it there; the old
// key opens nothing.
func TestRekeyRunningMember(t *testing.T) {
	h := newHarness(t)
	oldSealer := h.sealer
	n := h.start(rafttest.NewKV(), 1000)
	for i := range 10 {
		propose(t, n, fmt.Sprintf("before%d", i), "x")
	}
	newKey, _ := encryption.NewKey()
	both, _ := encryption.NewSealer(newKey, h.key)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Rekey(ctx, both); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		propose(t, n, fmt.Sprintf("after%d", i), "y")
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := storage.Open(h.dir, oldSealer, storage.Options{}); !errors.Is(err, encryption.ErrOpen) {
		t.Fatalf("open with the retired key: err = %v, want ErrOpen", err)
	}
	h.sealer, _ = encryption.NewSealer(newKey)
	kv := rafttest.NewKV()
	h.start(kv, 1000)
	if kv.Len() != 16 {
		t.Fatalf("restarted store has %d keys, want 16 (init, 10 before, 5 after)", kv.Len())
	}
	for _, k := range []string{"before0", "before9", "after4"} {
		if _, ok := kv.Get(k); !ok {
			t.Fatalf("%s missing after rekey and restart", k)
		}
	}
}

// A member rekeyed with nothing written since it started (here: restored
// from a backup, one empty entry of its own election applied) opens again:
// the rewritten log carries the hard state of now, not the one the member
// started with, so its snapshot counts as committed.
func TestRekeyRightAfterStart(t *testing.T) {
	key, _ := encryption.NewKey()
	sealer, _ := encryption.NewSealer(key)
	self := &api.RaftMember{RaftId: 7, NodeId: "node-a", Address: "127.0.0.1:7000"}
	h := &harness{t: t, dir: filepath.Join(t.TempDir(), "raft"), key: key, sealer: sealer, self: self}
	snap := &api.RaftSnapshot{Store: rafttest.NewKV().Save(), Members: []*api.RaftMember{self}}
	if err := WriteRestored(h.dir, sealer, "cluster-1", self, 3, 8, snap); err != nil {
		t.Fatal(err)
	}
	n := h.start(rafttest.NewKV(), 1000)
	barrier(t, n)
	newKey, _ := encryption.NewKey()
	both, _ := encryption.NewSealer(newKey, key)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Rekey(ctx, both); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	h.sealer, _ = encryption.NewSealer(newKey)
	h.start(rafttest.NewKV(), 1000)
}
