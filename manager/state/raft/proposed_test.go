package raft

import (
	"context"
	"math"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

func TestRequestIDReadsTheEncodedID(t *testing.T) {
	for _, id := range []uint64{1, 127, 128, 1 << 32, math.MaxUint64} {
		for _, actions := range [][]*api.StoreAction{nil, rafttest.Put("k", "v")} {
			data, err := proto.Marshal(&api.InternalRaftRequest{Id: id, Actions: actions})
			if err != nil {
				t.Fatal(err)
			}
			if got := requestID(data); got != id {
				t.Errorf("requestID of id %d with %d actions = %d", id, len(actions), got)
			}
		}
	}
	noID, err := proto.Marshal(&api.InternalRaftRequest{Actions: rafttest.Put("k", "v")})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"no id": noID, "empty": nil, "torn": {0x08, 0xff}} {
		if got := requestID(data); got != 0 {
			t.Errorf("requestID of %s = %d, want 0", name, got)
		}
	}
}

// recordingKV remembers the requests it was handed to apply.
type recordingKV struct {
	*rafttest.KV
	mu  sync.Mutex
	got map[uint64]*api.InternalRaftRequest
}

func (r *recordingKV) ApplyHeld(index uint64, req *api.InternalRaftRequest) error {
	r.mu.Lock()
	r.got[req.GetId()] = req
	r.mu.Unlock()
	return r.KV.ApplyHeld(index, req)
}

// The member applies what it proposed from the request it proposed, not
// from a copy decoded out of the entry; the entry, replayed after a
// restart, gives the same content; and no request is kept once its
// proposer has its answer, whatever the answer.
func TestProposerAppliesItsOwnRequest(t *testing.T) {
	h := newHarness(t)
	kv := &recordingKV{KV: rafttest.NewKV(), got: map[uint64]*api.InternalRaftRequest{}}
	n := h.startConfig(Config{Applier: kv})
	actions := rafttest.Put("a", "1")
	if err := n.Propose(context.Background(), actions); err != nil {
		t.Fatal(err)
	}
	found := false
	kv.mu.Lock()
	for _, req := range kv.got {
		if len(req.GetActions()) == 1 && req.GetActions()[0] == actions[0] {
			found = true
		}
	}
	kv.mu.Unlock()
	if !found {
		t.Fatal("the proposer's actions were not what it applied: its entry was decoded")
	}
	if err := n.Propose(context.Background(), rafttest.Put("b", rafttest.Rejected)); err == nil {
		t.Fatal("a rejected batch was accepted")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_ = n.Propose(cancelled, rafttest.Put("c", "3")) // whatever it answers, nothing may stay
	n.proposed.mu.Lock()
	kept := len(n.proposed.m)
	n.proposed.mu.Unlock()
	if kept != 0 {
		t.Fatalf("%d requests kept after their proposers returned", kept)
	}

	n.Stop()
	replayed := rafttest.NewKV()
	h.start(replayed, 0)
	if v, ok := replayed.Get("a"); !ok || v != "1" {
		t.Fatalf("a = %q, %v after a restart, want 1", v, ok)
	}
}
