package store

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
)

func BenchmarkApplyCreate(b *testing.B) {
	s := newStore(b)
	var index uint64
	for b.Loop() {
		index++
		id := strconv.FormatUint(index, 10)
		a := act(b, create, task(id, "s1", "n1", 0))
		if err := s.Apply(index, req(a)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyUpdate applies one task update at a time, each carrying
// the version it replaces, to a store of 100 000 tasks: an agent's
// status report as every manager applies it.
func BenchmarkApplyUpdate(b *testing.B) {
	const tasks = 100_000
	s := newStore(b)
	r := &api.InternalRaftRequest{}
	for i := range tasks {
		r.Actions = append(r.Actions, act(b, create, task(fmt.Sprintf("task-%06d", i), "s1", "n1", 0)))
	}
	if err := s.Apply(1, r); err != nil {
		b.Fatal(err)
	}
	index := uint64(1)
	versions := make([]uint64, tasks)
	for i := range versions {
		versions[i] = 1
	}
	for b.Loop() {
		index++
		i := int(index*7919) % tasks
		a := act(b, update, task(fmt.Sprintf("task-%06d", i), "s1", "n1", versions[i]))
		if err := s.Apply(index, req(a)); err != nil {
			b.Fatal(err)
		}
		versions[i] = index
	}
}

// BenchmarkUpdateCreate records and commits one task a Tx, as most
// writes are (a join token, a status report): the proposer's side and
// the apply together.
func BenchmarkUpdateCreate(b *testing.B) {
	s, _ := withProposer(b)
	var n uint64
	b.ReportAllocs()
	for b.Loop() {
		n++
		id := strconv.FormatUint(n, 10)
		if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Create(task(id, "s1", "n1", 0)) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyBatchLargeStore applies batches of 500 task creations, as
// the orchestrator proposes them, to a store holding 100 000 tasks.
func BenchmarkApplyBatchLargeStore(b *testing.B) {
	s := newStore(b)
	const batch = 500
	index := uint64(0)
	next := func() *api.InternalRaftRequest {
		r := &api.InternalRaftRequest{}
		for range batch {
			index++
			r.Actions = append(r.Actions, act(b, create, task(strconv.FormatUint(index, 10), "s1", "", 0)))
		}
		return r
	}
	for index < 100_000 {
		if err := s.Apply(index, next()); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.Apply(index, next()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/task")
}

// BenchmarkApplyPlacement assigns the tasks of one 100 000-replica service
// to 5 000 nodes in batches of 500, as the scheduler proposes them and a
// restart replays them (docs/bench/largestore.md): ids as identity.NewID makes
// them, so an index's comparisons see what they see in a manager.
func BenchmarkApplyPlacement(b *testing.B) {
	const tasks, nodes, batch = 100_000, 5_000, 500
	newID := func() string {
		id, err := identity.NewID()
		if err != nil {
			b.Fatal(err)
		}
		return id
	}
	serviceID := newID()
	nodeIDs := make([]string, nodes)
	for i := range nodeIDs {
		nodeIDs[i] = newID()
	}
	taskIDs := make([]string, tasks)
	for i := range taskIDs {
		taskIDs[i] = newID()
	}
	// Apply keeps the objects it is given: each round builds its own.
	requests := func() (created *api.InternalRaftRequest, placements []*api.InternalRaftRequest) {
		created = &api.InternalRaftRequest{}
		for _, id := range taskIDs {
			created.Actions = append(created.Actions, act(b, create, task(id, serviceID, "", 0)))
		}
		for i := 0; i < tasks; i += batch {
			r := &api.InternalRaftRequest{}
			for j, id := range taskIDs[i : i+batch] {
				r.Actions = append(r.Actions, act(b, update, task(id, serviceID, nodeIDs[(i+j)%nodes], 1)))
			}
			placements = append(placements, r)
		}
		return created, placements
	}
	var placed int
	for b.Loop() {
		b.StopTimer()
		created, placements := requests()
		s := newStore(b)
		if err := s.Apply(1, created); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for i, r := range placements {
			if err := s.Apply(uint64(i+2), r); err != nil {
				b.Fatal(err)
			}
		}
		placed += tasks
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(placed), "ns/task")
}
