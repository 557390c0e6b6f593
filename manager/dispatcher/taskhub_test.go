package dispatcher

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// A stream that subscribes while tasks are being written, to its node,
// away from it and elsewhere, ends up knowing exactly the node's tasks as
// the store holds them: its view plus the feed's later events miss
// nothing and hold nothing of other nodes.
func TestTaskHubFeedsMissNothing(t *testing.T) {
	st, _ := storetest.NewWithProposer(t)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the hub ends with its watch
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hub := newTaskHub()
	events := st.Watch(ctx, store.ObjectType[*api.Task]())
	wg.Go(func() { hub.run(events) })

	const writes = 300
	wrote := make(chan struct{})
	wg.Go(func() {
		defer close(wrote)
		for i := range writes {
			id := fmt.Sprintf("t%d", i%40)
			node := fmt.Sprintf("n%d", i%3)
			err := st.UpdateRetrying(ctx, 3, func(tx *store.Tx) error {
				if cur := tx.GetTask(id); cur != nil {
					if i%7 == 0 {
						return tx.Delete(cur)
					}
					cur.NodeId = node
					return tx.Update(cur)
				}
				return tx.Create(task(id, node, running, assignedS))
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})

	type sub struct {
		feed  *taskFeed
		index uint64
		known map[string]bool
	}
	var subs []*sub
	for i := range 8 {
		// Spread the subscriptions over the writes: each waits until
		// another eighth of them has applied.
		waitApplied(t, st, uint64(i*writes/8))
		s := &sub{known: map[string]bool{}}
		s.feed, s.index = hub.subscribe(st, "n1", func(tx store.ReadTx) {
			for _, tk := range tx.ListTasksByNode("n1") {
				s.known[tk.Id] = true
			}
		})
		subs = append(subs, s)
	}
	<-wrote
	// A last write on n1 tells each feed's reader it has seen the end.
	if err := st.Update(ctx, func(tx *store.Tx) error { return tx.Create(task("last", "n1", running, assignedS)) }); err != nil {
		t.Fatal(err)
	}
	var want map[string]bool
	st.View(func(tx store.ReadTx) {
		want = map[string]bool{}
		for _, tk := range tx.ListTasksByNode("n1") {
			want[tk.Id] = true
		}
	})
	final := st.AppliedIndex()
	for i, s := range subs {
		deadline := time.After(5 * time.Second)
		last := s.index
		for last < final {
			select {
			case <-s.feed.ready:
			case <-deadline:
				t.Fatalf("subscriber %d: feed stopped at index %d of %d", i, last, final)
			}
			evs, ended := s.feed.take()
			if ended {
				t.Fatalf("subscriber %d: feed ended", i)
			}
			for _, e := range evs {
				last = max(last, e.Index)
				if e.Index <= s.index {
					continue
				}
				tk := e.Object.(*api.Task)
				old, _ := e.Old.(*api.Task)
				if tk.NodeId != "n1" && old.GetNodeId() != "n1" {
					t.Fatalf("subscriber %d got an event of node %s", i, tk.NodeId)
				}
				s.known[tk.Id] = e.Kind != store.EventDelete && tk.NodeId == "n1"
			}
		}
		maps.DeleteFunc(s.known, func(_ string, on bool) bool { return !on })
		if !maps.Equal(s.known, want) {
			t.Errorf("subscriber %d (view at %d) knows %v, store has %v", i, s.index, s.known, want)
		}
		s.feed.cancel()
	}
	cancel()
	wg.Wait()
	// The hub ended: a new feed ends at once.
	f, _ := hub.subscribe(st, "n1", func(store.ReadTx) {})
	if _, ended := f.take(); !ended {
		t.Error("a feed of an ended hub is not ended")
	}
}

// waitApplied waits until st has applied index, for at most 5 s. It
// polls every millisecond, not at waitfor's pace, which backs off to one
// try per 50 ms: the 300 writes apply within a fraction of a second, and
// at 50 ms every subscription after the first landed after the last
// write.
func waitApplied(t *testing.T, st *store.Store, index uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for st.AppliedIndex() < index {
		if time.Now().After(deadline) {
			t.Fatalf("applied index %d after 5s, want %d", st.AppliedIndex(), index)
		}
		time.Sleep(time.Millisecond)
	}
}
