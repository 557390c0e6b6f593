package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

func TestUpdateMemberRewritesAddress(t *testing.T) {
	h := newHarness(t)
	n := h.start(rafttest.NewKV(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	moved := &api.RaftMember{RaftId: h.self.RaftId, NodeId: h.self.NodeId, Address: "127.0.0.2:7000"}
	if err := n.UpdateMember(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if addr, _ := n.ResolveAddress(h.self.RaftId); addr != moved.Address {
		t.Fatalf("address after the update: %q, want %q", addr, moved.Address)
	}
	if len(n.Members()) != 1 || !n.IsVoter(h.self.RaftId) {
		t.Fatalf("members %v after an address update, want the one voter", n.Members())
	}
	if err := n.UpdateMember(ctx, &api.RaftMember{RaftId: 42, Address: "x:1"}); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("update of an unknown member: %v", err)
	}
	// The rewrite is in the log: a restart replays it.
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	n = h.start(rafttest.NewKV(), 0)
	if addr, _ := n.ResolveAddress(h.self.RaftId); addr != moved.Address {
		t.Fatalf("address after a restart: %q, want %q", addr, moved.Address)
	}
}

func TestBootstrapStaticEveryMemberAVoter(t *testing.T) {
	h := newHarness(t) // for its sealer
	dir := filepath.Join(t.TempDir(), "raft")
	var members []*api.RaftMember
	for i := range 3 {
		members = append(members, &api.RaftMember{RaftId: uint64(10 + i), NodeId: fmt.Sprintf("n%d", i), Address: fmt.Sprintf("10.0.0.%d:7000", i+1)})
	}
	first := &api.InternalRaftRequest{Actions: rafttest.Put("init", "static")}
	if err := BootstrapStatic(dir, h.sealer, "cluster-s", members[1], members, first); err != nil {
		t.Fatal(err)
	}
	kv := rafttest.NewKV()
	n, err := New(Config{StateDir: dir, Sealer: h.sealer, Applier: kv, Logger: slog.New(slog.DiscardHandler), TickInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(func() { n.Stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, _ := kv.Get("init")
		voters := 0
		for _, m := range members {
			if n.IsVoter(m.RaftId) {
				voters++
			}
		}
		if v == "static" && voters == 3 && len(n.Members()) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after start: init %q, %d voters, members %v; want the init entry and 3 voters", v, voters, n.Members())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n.RaftID() != 11 || n.ClusterID() != "cluster-s" {
		t.Fatalf("self %x in %s", n.RaftID(), n.ClusterID())
	}
	if addr, _ := n.ResolveAddress(12); addr != "10.0.0.3:7000" {
		t.Fatalf("member 12 at %q", addr)
	}
}
