package store

import (
	"strconv"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/metrics/metricstest"
)

// TestCollectorCountsPublished: the objects gauge counts what readers
// see, each kind on its own, and a table with nothing in it as 0.
func TestCollectorCountsPublished(t *testing.T) {
	s := newStore(t)
	if err := s.Apply(1, req(act(t, create, node("n1", "a", 0, 0)), act(t, create, service("s1", "web", 0)),
		act(t, create, task("t1", "s1", "n1", 0)), act(t, create, task("t2", "s1", "n1", 0)))); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyHeld(2, req(act(t, create, task("t3", "s1", "n1", 0)))); err != nil {
		t.Fatal(err)
	}
	got := metricstest.Samples(t, s.Collector())
	want := map[string]float64{`jaco_store_objects{kind="node"}`: 1, `jaco_store_objects{kind="service"}`: 1,
		`jaco_store_objects{kind="task"}`: 2, `jaco_store_objects{kind="secret"}`: 0}
	for name, v := range want {
		if n, ok := got[name]; !ok || n != v {
			t.Errorf("%s = %v (present %v), want %v; a held batch counts only once published", name, n, ok, v)
		}
	}
	s.Publish()
	if n := metricstest.Samples(t, s.Collector())[`jaco_store_objects{kind="task"}`]; n != 3 {
		t.Errorf("tasks after Publish = %v, want 3", n)
	}
}

// BenchmarkCollectLargeStore is one scrape of the objects gauge over a
// store of 100 000 tasks: what a scrape costs the manager.
func BenchmarkCollectLargeStore(b *testing.B) {
	s := newStore(b)
	r := &api.InternalRaftRequest{}
	for i := range 100_000 {
		r.Actions = append(r.Actions, act(b, create, task(strconv.Itoa(i), "s1", "", 0)))
	}
	if err := s.Apply(1, r); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		metricstest.Samples(b, s.Collector())
	}
}
