package netalloc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func network(id, name, subnet string) *api.Network {
	return &api.Network{Id: id, Meta: &api.Meta{}, Spec: &api.NetworkSpec{Name: name, Subnet: subnet}}
}

func node(id string, blocks ...string) *api.Node {
	n := &api.Node{Id: id, Meta: &api.Meta{}, Hostname: id}
	for _, b := range blocks {
		nw, p, _ := strings.Cut(b, "=")
		n.OverlayBlocks = append(n.OverlayBlocks, &api.OverlayBlock{NetworkId: nw, Prefix: p})
	}
	return n
}

func task(id, nodeID string, networks ...string) *api.Task {
	return &api.Task{Id: id, Meta: &api.Meta{}, ServiceId: "svc", NodeId: nodeID, Spec: &api.ServiceSpec{Networks: networks}}
}

func blocksOf(n *api.Node) string {
	var parts []string
	for _, b := range n.GetOverlayBlocks() {
		parts = append(parts, b.NetworkId+"="+b.Prefix)
	}
	return strings.Join(parts, " ")
}

func TestPlan(t *testing.T) {
	nets := []*api.Network{network("a", "front", "10.0.0.0/16"), network("b", "back", "198.18.5.0/24")}
	for _, tc := range []struct {
		name  string
		nodes []*api.Node
		tasks []*api.Task
		want  map[string]string // node → blocks after; nodes absent are unchanged
		short int
	}{
		{"a node gets one block per network its tasks name",
			[]*api.Node{node("n1"), node("n2")},
			[]*api.Task{task("t1", "n1", "front", "back"), task("t2", "n2", "front"), task("t3", "", "front")},
			map[string]string{"n1": "a=10.0.0.0/26 b=198.18.5.0/26", "n2": "a=10.0.0.64/26"}, 0},
		{"blocks stay where they are; a new node takes a free one",
			[]*api.Node{node("n1", "a=10.0.0.64/26"), node("n2")},
			[]*api.Task{task("t1", "n1", "front"), task("t2", "n2", "front")},
			map[string]string{"n2": "a=10.0.0.0/26"}, 0},
		{"a block no task needs, or of a removed network, goes back",
			[]*api.Node{node("n1", "a=10.0.0.0/26", "gone=10.9.0.0/26"), node("n2", "b=198.18.5.0/26")},
			[]*api.Task{task("t1", "n1", "front")},
			map[string]string{"n1": "a=10.0.0.0/26", "n2": ""}, 0},
		{"a /24 has three node blocks; the fourth node waits",
			[]*api.Node{node("n1"), node("n2"), node("n3"), node("n4")},
			[]*api.Task{task("t1", "n1", "back"), task("t2", "n2", "back"), task("t3", "n3", "back"), task("t4", "n4", "back")},
			map[string]string{"n1": "b=198.18.5.0/26", "n2": "b=198.18.5.64/26", "n3": "b=198.18.5.128/26"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed, short := plan(nets, tc.nodes, slices.Values(tc.tasks), nil)
			got := map[string]string{}
			for _, n := range changed {
				got[n.Id] = blocksOf(n)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(short) != tc.short {
				t.Fatalf("changed %v, %d short (%v); want %v, %d short", got, len(short), short, tc.want, tc.short)
			}
		})
	}
}

// TestRunFollowsTheStore: placing a task on a network gives its node a
// block; removing the task gives it back.
func TestRunFollowsTheStore(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st, network("a", "front", "10.0.0.0/16"), node("n1"))
	ctx := runAllocator(t, st)

	wait := func(want string) {
		t.Helper()
		waitUntil(t, st, "n1's blocks", want, func(tx store.ReadTx) string { return blocksOf(tx.GetNode("n1")) })
	}
	storetest.Create(t, st, task("t1", "", "front"))
	if err := st.Update(ctx, func(tx *store.Tx) error {
		tk := tx.GetTask("t1")
		tk.NodeId = "n1"
		return tx.Update(tk)
	}); err != nil {
		t.Fatal(err)
	}
	wait("a=10.0.0.0/26")
	if err := st.Update(ctx, func(tx *store.Tx) error { return tx.Delete(tx.GetTask("t1")) }); err != nil {
		t.Fatal(err)
	}
	wait("")
}

// runAllocator runs an allocator over st until the test ends and returns
// a context for the test's own writes.
func runAllocator(t *testing.T, st *store.Store) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(st, WithBatchDelay(time.Millisecond)).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

// waitUntil reads the store until read says want, failing the test after
// 5 s with what it said last.
func waitUntil(t *testing.T, st *store.Store, what, want string, read func(store.ReadTx) string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got string
		st.View(func(tx store.ReadTx) { got = read(tx) })
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %q, want %q", what, got, want)
		}
		time.Sleep(time.Millisecond)
	}
}
