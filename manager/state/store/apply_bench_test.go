package store

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/jaco-project/jaco/api"
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
