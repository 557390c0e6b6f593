package raft

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// writeThreeVoterState writes, in h.dir, the log of a member of a
// three-voter group: entries up to 6 committed, entry 7 (a put of "c")
// appended at term 2 but not known committed here.
func writeThreeVoterState(t *testing.T, h *harness, others ...*api.RaftMember) {
	t.Helper()
	meta, err := walMetadata("cluster-1", h.self, nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(m *api.RaftMember) []byte {
		ctx, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		data, err := (&raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: m.RaftId, Context: ctx}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	put := func(k, v string) []byte {
		data, err := proto.Marshal(&api.InternalRaftRequest{Actions: rafttest.Put(k, v)})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	ents := []raftpb.Entry{
		{Type: raftpb.EntryConfChange, Term: 1, Index: 1, Data: add(h.self)},
		{Term: 1, Index: 2, Data: put("init", "cluster-init")},
		{Type: raftpb.EntryConfChange, Term: 1, Index: 3, Data: add(others[0])},
		{Type: raftpb.EntryConfChange, Term: 1, Index: 4, Data: add(others[1])},
		{Term: 1, Index: 5, Data: put("a", "1")},
		{Term: 2, Index: 6, Data: put("b", "2")},
		{Term: 2, Index: 7, Data: put("c", "3")},
	}
	if err := storage.Bootstrap(h.dir, h.sealer, meta, raftpb.HardState{Term: 3, Vote: h.self.RaftId, Commit: 6}, ents); err != nil {
		t.Fatal(err)
	}
}

func TestForceNewClusterKeepsTheLogAndLeadsAlone(t *testing.T) {
	h := newHarness(t)
	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	b := &api.RaftMember{RaftId: h.self.RaftId + 1, NodeId: "node-b", Address: "127.0.0.1:7001"}
	c := &api.RaftMember{RaftId: h.self.RaftId + 2, NodeId: "node-c", Address: "127.0.0.1:7002"}
	writeThreeVoterState(t, h, b, c)

	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f, err := ForceNewCluster(h.dir, h.sealer, rafttest.NewKV(), now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Skipped != "" || f.Index != 7 || f.Term != 2 || f.Adopted != 1 || len(f.Blacklisted) != 2 {
		t.Fatalf("forced = %+v, want index 7 term 2, 1 adopted, 2 blacklisted", f)
	}
	if _, err := os.Stat(filepath.Join(f.OldDir, "wal")); err != nil {
		t.Fatalf("old state not kept: %v", err)
	}

	kv := rafttest.NewKV()
	n := h.start(kv, 0)
	// c lies past the commit index this member recorded; the leader may
	// have acknowledged it, so it is kept.
	for k, want := range map[string]string{"init": "cluster-init", "a": "1", "b": "2", "c": "3"} {
		if v, ok := kv.Get(k); !ok || v != want {
			t.Errorf("%s = %q %v after force, want %q", k, v, ok, want)
		}
	}
	for _, m := range []*api.RaftMember{b, c} {
		if !n.IsRemoved(m.RaftId) || n.IsVoter(m.RaftId) {
			t.Errorf("%s: removed %v voter %v, want removed and no voter", m.NodeId, n.IsRemoved(m.RaftId), n.IsVoter(m.RaftId))
		}
		if err := n.Step(context.Background(), raftpb.Message{From: m.RaftId, To: h.self.RaftId, Type: raftpb.MsgHeartbeat}); !errors.Is(err, ErrMemberRemoved) {
			t.Errorf("message from %s: %v, want ErrMemberRemoved", m.NodeId, err)
		}
	}
	if addr, ok := n.ResolveAddress(h.self.RaftId); !ok || addr != h.self.Address || n.NodeID() != "node-a" || n.ClusterID() != "cluster-1" {
		t.Fatalf("identity changed: address %q node %q cluster %q", addr, n.NodeID(), n.ClusterID())
	}
	propose(t, n, "d", "4")
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	// The flag left on: a second start changes nothing.
	again, err := ForceNewCluster(h.dir, h.sealer, rafttest.NewKV(), now.Add(time.Hour))
	if err != nil || again.Skipped == "" {
		t.Fatalf("second force: %+v %v, want skipped", again, err)
	}
	kv = rafttest.NewKV()
	h.start(kv, 0)
	if v, _ := kv.Get("d"); v != "4" {
		t.Fatalf("write after the force lost by a second start with the flag: d = %q", v)
	}
}

func TestForceNewClusterFromSnapshotAndLearner(t *testing.T) {
	h := newHarness(t)
	kv := rafttest.NewKV()
	n := h.start(kv, 5)
	for i := range 12 {
		propose(t, n, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	gone := &api.RaftMember{RaftId: h.self.RaftId ^ 0xff, NodeId: "node-gone", Address: "127.0.0.1:7009"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.AddLearner(ctx, gone); err != nil {
		t.Fatal(err)
	}
	propose(t, n, "last", "x")
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	f, err := ForceNewCluster(h.dir, h.sealer, rafttest.NewKV(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if f.Skipped != "" || len(f.Blacklisted) != 1 || f.Blacklisted[0].RaftId != gone.RaftId {
		t.Fatalf("forced = %+v, want %x blacklisted", f, gone.RaftId)
	}
	kv = rafttest.NewKV()
	n = h.start(kv, 5)
	if kv.Len() != 14 || !n.IsRemoved(gone.RaftId) {
		t.Fatalf("after force: %d keys (want 14), learner removed %v", kv.Len(), n.IsRemoved(gone.RaftId))
	}
}

func TestForceNewClusterRefusesANonMember(t *testing.T) {
	h := newHarness(t)
	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	if err := BootstrapJoin(h.dir, h.sealer, "cluster-1", h.self, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ForceNewCluster(h.dir, h.sealer, rafttest.NewKV(), time.Now()); !errors.Is(err, ErrNotAVoter) {
		t.Fatalf("force on a joiner that never got its log: %v, want ErrNotAVoter", err)
	}
	if !Exists(h.dir) {
		t.Fatal("state dir touched by a refused force")
	}
}

// A force cut between its two renames left the new state only in the
// staging dir: it still counts as state to force, and the next force
// installs it and, finding it already forced, changes nothing more.
func TestForceNewClusterFinishesAnInterruptedSwap(t *testing.T) {
	h := newHarness(t)
	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	b := &api.RaftMember{RaftId: h.self.RaftId + 1, NodeId: "node-b", Address: "127.0.0.1:7001"}
	c := &api.RaftMember{RaftId: h.self.RaftId + 2, NodeId: "node-c", Address: "127.0.0.1:7002"}
	writeThreeVoterState(t, h, b, c)
	if _, err := ForceNewCluster(h.dir, h.sealer, rafttest.NewKV(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(h.dir, forcedDir(h.dir)); err != nil {
		t.Fatal(err)
	}
	if Exists(h.dir) || !HasStateToForce(h.dir) {
		t.Fatalf("interrupted swap: Exists %v HasStateToForce %v, want false, true", Exists(h.dir), HasStateToForce(h.dir))
	}
	f, err := ForceNewCluster(h.dir, h.sealer, rafttest.NewKV(), time.Now())
	if err != nil || f.Skipped == "" {
		t.Fatalf("force after an interrupted swap: %+v %v, want skipped (already forced)", f, err)
	}
	kv := rafttest.NewKV()
	n := h.start(kv, 0)
	if v, _ := kv.Get("c"); v != "3" || !n.IsRemoved(b.RaftId) {
		t.Fatalf("installed state: c = %q, %x removed %v; want the forced state", v, b.RaftId, n.IsRemoved(b.RaftId))
	}
}
