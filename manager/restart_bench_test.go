package manager

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/state/raftstoretest"
	"github.com/jaco-project/jaco/manager/state/store"
)

// BenchmarkRestart measures what an operator waits for when a manager
// holding a large store restarts: from Open (the newest snapshot and the
// log after it read, unsealed and applied) until the member leads with
// everything before applied (WaitReady), the point at which jacod starts
// its leader subsystems. The store is built once, as a new user builds
// it: a service of 100 000 replicas no node may run, whose tasks the
// orchestrator creates through raft and the scheduler leaves pending with
// their reasons. Every iteration opens that same directory again.
//
// Reported: ms to lead, p50 and max over the iterations; heap-MB, the
// heap in use after a GC once the restarted manager leads.
func BenchmarkRestart(b *testing.B) {
	const replicas = 100_000
	dir, sealer := raftstoretest.Bootstrap(b, &api.InternalRaftRequest{Actions: []*api.StoreAction{{
		Kind: api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_Service{Service: &api.Service{Id: "big", SpecVersion: 1, Meta: &api.Meta{}, Spec: &api.ServiceSpec{
			Name: "big", Replicas: replicas,
			Bundle:    &api.HookBundle{Files: map[string][]byte{api.HookLaunch: []byte("#!/bin/sh\nexec sleep 100000\n")}},
			Placement: &api.Placement{Constraints: []string{"node.labels.none==x"}},
		}}},
	}}})
	open := func() (*Manager, time.Duration) {
		start := time.Now()
		m := openLeading(b, dir, sealer)
		return m, time.Since(start)
	}
	m, _ := open()
	waitPending(b, m, replicas)
	if err := m.Stop(); err != nil {
		b.Fatal(err)
	}

	var took []time.Duration
	var heap uint64
	b.ResetTimer()
	for range b.N {
		m, d := open()
		took = append(took, d)
		b.StopTimer()
		heap = raftstoretest.HeapInuse()
		if err := m.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(percentile(took, 0.5))/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(took[len(took)-1])/float64(time.Millisecond), "max-ms")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
}

// waitPending waits until the store holds n tasks, each given its pending
// reason by the scheduler, so the store is what a restart will load.
func waitPending(b *testing.B, m *Manager, n int) {
	b.Helper()
	waitfor.Eventually(b, 5*time.Minute, func() error {
		pending := 0
		m.store.View(func(tx store.ReadTx) {
			for t := range store.AllTasks(tx) {
				if t.GetStatus().GetReason() != "" {
					pending++
				}
			}
		})
		if pending != n {
			return fmt.Errorf("%d of %d tasks pending with a reason", pending, n)
		}
		return nil
	})
}
