package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raftstoretest"
	"github.com/jaco-project/jaco/manager/state/store"
)

// BenchmarkCreate measures the creation of a big service's tasks committed
// through raft: a lone raft member with its sealed, fsync'ed WAL under
// b.TempDir(), the store as its applier, and one hook-bundle service of
// REPLICAS replicas (docs/bench/largestore.md's shape: the tasks nothing
// places). Each iteration starts an orchestrator and times it until the
// store holds every task.
//
// Reported: creates/s; heap-MB (HeapInuse after a GC, with the tasks
// stored and the orchestrator idle). Then, in the same run, the
// reference: the same tasks created with no orchestrator, by bare Updates
// of 500 tasks each, one after another as the orchestrator's batches go
// (ref-creates/s), and orch/ref, the ratio of the two durations.
func BenchmarkCreate(b *testing.B) {
	for _, replicas := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) { benchCreate(b, replicas) })
	}
}

func benchCreate(b *testing.B, replicas int) {
	var elapsed, ref time.Duration
	var heap uint64
	b.StopTimer()
	for range b.N {
		st, closeStore := raftstoretest.Open(b)
		svc := bigService(replicas)
		if err := st.Update(context.Background(), func(tx *store.Tx) error { return tx.Create(svc) }); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		o := New(st, WithLogger(slog.New(slog.DiscardHandler)))
		var wg sync.WaitGroup
		b.StartTimer()
		start := time.Now()
		wg.Add(1)
		go func() { defer wg.Done(); o.Run(ctx) }()
		waitTasks(b, st, svc.Id, replicas)
		elapsed += time.Since(start)
		b.StopTimer()
		heap = raftstoretest.HeapInuse()
		cancel()
		wg.Wait()
		closeStore()

		st, closeStore = raftstoretest.Open(b)
		ref += referenceCreates(b, st, bigService(replicas))
		closeStore()
	}
	per := float64(b.N)
	b.ReportMetric(float64(replicas)*per/elapsed.Seconds(), "creates/s")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
	b.ReportMetric(float64(replicas)*per/ref.Seconds(), "ref-creates/s")
	b.ReportMetric(elapsed.Seconds()/ref.Seconds(), "orch/ref")
}

// bigService is a hook-bundle service of n replicas, placed nowhere.
func bigService(n int) *api.Service {
	return &api.Service{Id: "big", SpecVersion: 1, Spec: &api.ServiceSpec{
		Name: "big", Replicas: uint64(n),
		Bundle:    &api.HookBundle{Files: map[string][]byte{api.HookLaunch: []byte("#!/bin/sh\nexec sleep 100000\n")}},
		Placement: &api.Placement{Constraints: []string{"node.labels.none==x"}},
	}}
}

// waitTasks polls until service id has n tasks in the store.
func waitTasks(b *testing.B, st *store.Store, id string, n int) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		count := 0
		st.View(func(tx store.ReadTx) {
			tx.EachTask(id, "", func(*api.Task) bool { count++; return true })
		})
		if count >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks after 5 minutes", count, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// referenceCreates commits svc and its tasks as the orchestrator would,
// in batches of 500, one after another, with no planning, and returns how
// long the task batches took.
func referenceCreates(b *testing.B, st *store.Store, svc *api.Service) time.Duration {
	b.Helper()
	ctx := context.Background()
	if err := st.Update(ctx, func(tx *store.Tx) error { return tx.Create(svc) }); err != nil {
		b.Fatal(err)
	}
	const batch = 500
	now := time.Now()
	start := time.Now()
	for slot := uint64(1); slot <= svc.GetSpec().GetReplicas(); slot += batch {
		err := st.Update(ctx, func(tx *store.Tx) error {
			for s := slot; s < slot+batch && s <= svc.GetSpec().GetReplicas(); s++ {
				t, err := newTask(svc, s, "", now, nil)
				if err != nil {
					return err
				}
				if err := tx.Create(t); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}
