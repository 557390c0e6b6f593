package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// memNet carries raft messages between members in this process, in order
// per receiver, and can cut a member off from every other.
type memNet struct {
	mu    sync.Mutex
	nodes map[uint64]*Node
	inbox map[uint64]chan raftpb.Message
	cut   map[uint64]bool
	wg    sync.WaitGroup
	stop  chan struct{}
}

func newMemNet(t testing.TB) *memNet {
	net := &memNet{nodes: map[uint64]*Node{}, inbox: map[uint64]chan raftpb.Message{}, cut: map[uint64]bool{}, stop: make(chan struct{})}
	t.Cleanup(func() {
		close(net.stop)
		net.wg.Wait()
	})
	return net
}

// attach delivers the messages for n's raft id to it until the net stops.
func (net *memNet) attach(n *Node) {
	in := make(chan raftpb.Message, 4096)
	net.mu.Lock()
	net.nodes[n.RaftID()], net.inbox[n.RaftID()] = n, in
	net.mu.Unlock()
	net.wg.Go(func() {
		for {
			select {
			case m := <-in:
				_ = n.Step(context.Background(), m)
			case <-net.stop:
				return
			}
		}
	})
}

func (net *memNet) isolate(id uint64, cut bool) {
	net.mu.Lock()
	defer net.mu.Unlock()
	net.cut[id] = cut
}

type memTransport struct {
	net  *memNet
	self uint64
}

func (t memTransport) Send(msgs []raftpb.Message) {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	for _, m := range msgs {
		in, ok := t.net.inbox[m.To]
		if !ok || t.net.cut[t.self] || t.net.cut[m.To] {
			continue
		}
		select {
		case in <- m:
		default: // a full inbox drops, as a congested network would
		}
	}
}

func (memTransport) AddPeer(uint64, string) error { return nil }
func (memTransport) RemovePeer(uint64)            {}

// threeVoters starts a statically formed group of three voters on net;
// tune changes each member's Config before it opens.
func threeVoters(t testing.TB, net *memNet, tune ...func(*Config)) ([]*Node, []*rafttest.KV) {
	sealer := newHarness(t).sealer
	var members []*api.RaftMember
	for i := range 3 {
		id, err := NewRaftID()
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, &api.RaftMember{RaftId: id, NodeId: fmt.Sprintf("node-%d", i), Address: fmt.Sprintf("127.0.0.1:%d", 7000+i)})
	}
	var nodes []*Node
	var kvs []*rafttest.KV
	for i, self := range members {
		dir := filepath.Join(t.TempDir(), self.NodeId)
		if err := BootstrapStatic(dir, sealer, "cluster-1", self, members, &api.InternalRaftRequest{Actions: rafttest.Put("init", "x")}); err != nil {
			t.Fatal(err)
		}
		kv := rafttest.NewKV()
		cfg := Config{StateDir: dir, Sealer: sealer, Applier: kv, Transport: memTransport{net: net, self: self.RaftId},
			Logger: slog.New(slog.DiscardHandler).With("member", i), TickInterval: 10 * time.Millisecond}
		for _, f := range tune {
			f(&cfg)
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		net.attach(n)
		nodes, kvs = append(nodes, n), append(kvs, kv)
	}
	for _, n := range nodes {
		n.Start()
		t.Cleanup(func() { n.Stop() })
	}
	return nodes, kvs
}

// leaderOf waits until one of nodes (none of except) leads and returns its
// position.
func leaderOf(t testing.TB, nodes []*Node, except int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range nodes {
			if i != except && n.IsLeader() {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader elected")
	return -1
}

// TestReadBarrierOfADeposedLeaderWaits: a leader cut off from the others
// still believes it leads for a while, and its store misses what the new
// leader commits. A read behind ReadBarrier there must not be served (it
// would be stale); on a member of the majority it is served and sees the
// new write; once the old leader is back, its barrier passes and its
// store holds the write too.
func TestReadBarrierOfADeposedLeaderWaits(t *testing.T) {
	net := newMemNet(t)
	nodes, kvs := threeVoters(t, net)
	old := leaderOf(t, nodes, -1)
	propose(t, nodes[old], "before", "1")

	net.isolate(nodes[old].RaftID(), true)
	next := leaderOf(t, nodes, old)
	propose(t, nodes[next], "after", "2")

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := nodes[old].ReadBarrier(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadBarrier on the cut-off old leader = %v, want it to wait until the deadline", err)
	}
	if _, ok := kvs[old].Get("after"); ok {
		t.Fatal("the cut-off member applied a write it cannot have received")
	}

	follower := 3 - old - next
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nodes[follower].ReadBarrier(ctx); err != nil {
		t.Fatalf("ReadBarrier on a follower of the new leader: %v", err)
	}
	if v, ok := kvs[follower].Get("after"); !ok || v != "2" {
		t.Fatalf("after the follower's barrier its store holds after=%q (%v), want the acknowledged write", v, ok)
	}

	net.isolate(nodes[old].RaftID(), false)
	if err := nodes[old].ReadBarrier(ctx); err != nil {
		t.Fatalf("ReadBarrier on the old leader once back: %v", err)
	}
	if v, ok := kvs[old].Get("after"); !ok || v != "2" {
		t.Fatalf("after its barrier the old leader's store holds after=%q (%v), want the acknowledged write", v, ok)
	}
}
