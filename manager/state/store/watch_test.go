package store

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// next receives one event or fails after a while.
func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return Event{}
}

// closed waits for ch to be closed, draining it.
func closed(t *testing.T, ch <-chan Event) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("watch channel not closed within 5s")
		}
	}
}

func TestWatchDeliversInOrder(t *testing.T) {
	s := newStore(t)
	ch := s.Watch(t.Context())
	apply := func(index uint64, actions ...*api.StoreAction) {
		if err := s.Apply(index, req(actions...)); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, act(t, create, node("n1", "h1", 0, 0)), act(t, create, task("t1", "", "", 0)))
	apply(2, act(t, update, node("n1", "h2", 0, 1)))
	if err := s.Apply(3, req(act(t, del, task("t1", "", "", 7)))); err == nil {
		t.Fatal("stale delete applied")
	}
	apply(4, act(t, del, task("t1", "", "", 1)))

	want := []struct {
		kind  EventKind
		id    string
		index uint64
	}{
		{EventCreate, "n1", 1}, {EventCreate, "t1", 1}, {EventUpdate, "n1", 2}, {EventDelete, "t1", 4},
	}
	for i, w := range want {
		e := next(t, ch)
		if e.Kind != w.kind || e.Object.GetId() != w.id || e.Index != w.index {
			t.Fatalf("event %d = %v %s at %d, want %v %s at %d",
				i, e.Kind, e.Object.GetId(), e.Index, w.kind, w.id, w.index)
		}
		if e.Kind == EventUpdate {
			if e.Old.(*api.Node).GetHostname() != "h1" || e.Object.(*api.Node).GetHostname() != "h2" {
				t.Errorf("update event old %v new %v", e.Old, e.Object)
			}
			// Events carry copies: changing one changes nothing stored.
			e.Object.(*api.Node).Hostname = "mine"
			s.View(func(tx ReadTx) {
				if tx.FindNodeByHostname("h2") == nil {
					t.Error("changing an event's object changed the store")
				}
			})
		}
	}
}

func TestWatchFilters(t *testing.T) {
	s := newStore(t)
	taskUpdates := s.Watch(t.Context(), ObjectType[*api.Task](), ByKind(EventUpdate))
	nodesOrServices := s.Watch(t.Context(), Any(ObjectType[*api.Node](), ObjectType[*api.Service]()))

	for i, a := range []*api.StoreAction{
		act(t, create, task("t1", "", "", 0)),
		act(t, create, node("n1", "h1", 0, 0)),
		act(t, update, task("t1", "", "n1", 1)),
		act(t, create, service("s1", "web", 0)),
	} {
		if err := s.Apply(uint64(i+1), req(a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Restore(&api.StoreSnapshot{}, 5); err != nil {
		t.Fatal(err)
	}

	if e := next(t, taskUpdates); e.Kind != EventUpdate || e.Object.GetId() != "t1" {
		t.Errorf("task updates: got %v %v", e.Kind, e.Object)
	}
	if e := next(t, taskUpdates); e.Kind != EventReset || e.Index != 5 {
		t.Errorf("task updates: got %v at %d, want the reset at 5", e.Kind, e.Index)
	}
	for _, id := range []string{"n1", "s1"} {
		if e := next(t, nodesOrServices); e.Object.GetId() != id {
			t.Errorf("nodes or services: got %v, want %s", e.Object, id)
		}
	}
	if e := next(t, nodesOrServices); e.Kind != EventReset {
		t.Errorf("nodes or services: got %v, want the reset", e.Kind)
	}
}

func TestWatchStops(t *testing.T) {
	base := goleak.IgnoreCurrent()
	s := New(nil)
	withStore := goleak.IgnoreCurrent()

	// A watcher that never reads must not hold Apply up.
	ctx, cancel := context.WithCancel(context.Background())
	idle := s.Watch(ctx)
	for i := range 1000 {
		id := strconv.Itoa(i)
		if err := s.Apply(uint64(i+1), req(act(t, create, task(id, "", "", 0)))); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	closed(t, idle)
	// goleak.Find gives goroutines under half a second to end; they get
	// the 5 s a loaded machine may need.
	waitfor.Eventually(t, 5*time.Second, func() error { return goleak.Find(withStore) })

	// Close ends the watches that are left, read or not.
	reading := s.Watch(context.Background())
	notReading := s.Watch(context.Background())
	if err := s.Apply(1001, req(act(t, create, task("x", "", "", 0)))); err != nil {
		t.Fatal(err)
	}
	next(t, reading)
	s.Close()
	closed(t, reading)
	closed(t, notReading)
	closed(t, s.Watch(context.Background()))
	waitfor.Eventually(t, 5*time.Second, func() error { return goleak.Find(base) })
}

// TestViewAndWatchHasNoGap starts watches while entries are being applied
// and checks that each view plus its events hold every entry exactly once.
func TestViewAndWatchHasNoGap(t *testing.T) {
	const entries, watches = 2000, 20
	s := newStore(t)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for i := 1; i <= entries; i++ {
			if err := s.Apply(uint64(i), req(act(t, create, task(strconv.Itoa(i), "", "", 0)))); err != nil {
				t.Error(err)
				return
			}
		}
	})

	type watch struct {
		seen int
		ch   <-chan Event
	}
	var started []watch
	for k := range watches {
		for s.AppliedIndex() < uint64(k*entries/watches) {
			runtime.Gosched()
		}
		var w watch
		w.ch = s.ViewAndWatch(t.Context(), func(tx ReadTx) { w.seen = len(tx.ListTasks()) })
		started = append(started, w)
	}
	overlapped := 0
	for _, w := range started {
		if w.seen > 0 && w.seen < entries {
			overlapped++
		}
		// The view holds entries 1..seen, so events must start at seen+1.
		for want := w.seen + 1; want <= entries; want++ {
			e := next(t, w.ch)
			if e.Index != uint64(want) || e.Object.GetId() != strconv.Itoa(want) {
				t.Fatalf("view held %d entries; got event for %s at %d, want entry %d",
					w.seen, e.Object.GetId(), e.Index, want)
			}
		}
	}
	t.Logf("%d of %d watches started while entries were applied", overlapped, watches)
}
