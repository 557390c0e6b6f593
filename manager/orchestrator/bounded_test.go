package orchestrator

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// spy stands in front of the harness's proposer so a test sees each
// proposal's actions before they are applied, and can act then (as
// another writer whose entry commits first).
type spy struct {
	inner  store.Proposer
	before func(actions []*api.StoreAction)
}

func (s *spy) Propose(ctx context.Context, actions []*api.StoreAction) error {
	s.before(actions)
	return s.inner.Propose(ctx, actions)
}

// createsFor counts the task creations of service id in a proposal.
func createsFor(actions []*api.StoreAction, id string) int {
	n := 0
	for _, a := range actions {
		if a.GetKind() == api.StoreAction_KIND_CREATE && a.GetTask().GetServiceId() == id {
			n++
		}
	}
	return n
}

// The defect: `service rm` of a service whose replicas were being created
// in batches did not stop them; every batch planned from the read before
// the removal went on being committed (docs/adr/0022). The removal
// commits just ahead of a batch of web's tasks, which was planned and
// proposed while the service stood and may land; nothing of web is
// proposed after it.
func TestRemovedServiceGetsNoMoreTasks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// others are created with web, planned in the same passes.
		others []*api.Service
		web    uint64
		// at is the batch of web's tasks the removal commits ahead of.
		at int32
	}{
		// 200 replicas in batches of 5, over many passes.
		{name: "between passes", web: 200, at: 3},
		// aaa's 3 tasks and 5 of web's make two batches of one pass: the
		// second, planned before the removal, is proposed after it.
		{name: "within a pass", others: []*api.Service{replicated("aaa", 3)}, web: 10, at: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.o = New(h.st, WithClock(h.clock.Now), WithBatchSize(5))
			var batches, late atomic.Int32
			var removed atomic.Bool
			removeErr := make(chan error, 1)
			h.st.SetProposer(&spy{inner: h.p, before: func(actions []*api.StoreAction) {
				n := createsFor(actions, "web")
				switch {
				case n == 0:
				case removed.Load():
					late.Add(int32(n))
				case batches.Add(1) == tc.at:
					removeErr <- h.st.Update(context.Background(), func(tx *store.Tx) error {
						return tx.Delete(tx.GetService("web"))
					})
					removed.Store(true)
				}
			}})
			for _, s := range tc.others {
				h.createService(s)
			}
			h.createService(replicated("web", tc.web))
			h.run()
			h.waitFor("web removed and its tasks gone", func() bool {
				return removed.Load() && len(h.tasks("web")) == 0
			})
			if err := <-removeErr; err != nil {
				t.Fatalf("remove web: %v", err)
			}
			if n := late.Load(); n != 0 {
				t.Fatalf("%d tasks of web were proposed after its removal committed", n)
			}
			for _, s := range tc.others {
				h.waitFor(s.Id+"'s tasks", func() bool { return len(h.liveTasks(s.Id)) == int(s.Spec.Replicas) })
			}
		})
	}
}

// The defect: a 1 000 000-replica service took the leader from 57 MiB to
// 8 GiB before its first task committed, as the orchestrator planned
// every replica before proposing the first batch. What a pass holds must
// not grow with the replica count.
func TestCreatingABigServiceKeepsThePlanSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10 000 tasks")
	}
	h := newHarness(t)
	svc := replicated("web", 10_000)
	// A 4 KiB hook file: every task holds a copy of the spec, bytes and all.
	svc.Spec.Image = ""
	svc.Spec.Bundle = &api.HookBundle{Files: map[string][]byte{"start": bytes.Repeat([]byte("x"), 4<<10)}}
	h.createService(svc)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	grown := make(chan uint64, 1)
	h.st.SetProposer(&spy{inner: h.p, before: func(actions []*api.StoreAction) {
		if createsFor(actions, "web") == 0 || len(grown) > 0 {
			return
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		grown <- ms.HeapAlloc - min(ms.HeapAlloc, base)
	}})
	h.run()
	select {
	case g := <-grown:
		// A plan of all 10 000 tasks holds a copy of each, over 50 MiB;
		// a pass of one batch holds a few MiB.
		const bound = 16 << 20
		if g > bound {
			t.Fatalf("the heap grew by %d MiB before the first batch was proposed; want at most %d MiB", g>>20, bound>>20)
		}
		t.Logf("heap growth at the first batch: %.1f MiB", float64(g)/(1<<20))
	case <-time.After(time.Minute):
		t.Fatal("no batch of web's tasks proposed within a minute")
	}
}

// The defect: a manager ignored SIGTERM for 20 s while its orchestrator
// worked through a huge plan. Once ctx is done, no further batch is
// proposed, whatever the proposer does with ctx, and Run returns.
func TestRunStopsBetweenBatchesWhenCancelled(t *testing.T) {
	h := newHarness(t)
	h.o = New(h.st, WithClock(h.clock.Now), WithBatchSize(5))
	h.createService(replicated("web", 100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var batches, late atomic.Int32
	h.st.SetProposer(&spy{inner: h.p, before: func(actions []*api.StoreAction) {
		if createsFor(actions, "web") == 0 {
			return
		}
		if ctx.Err() != nil {
			late.Add(1)
			return
		}
		if batches.Add(1) == 2 {
			cancel() // this proposal is under way: it may still commit
		}
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.o.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run still going 5 s after its context was cancelled")
	}
	if n := late.Load(); n != 0 {
		t.Fatalf("%d batches proposed after the context was cancelled", n)
	}
	if n := len(h.tasks("web")); n >= 100 {
		t.Fatalf("all %d tasks created after the context was cancelled at the second batch", n)
	}
}

// The defect: a pass created one batch of a service's missing tasks and
// read every task of the service to do it, so creating 100 000 replicas
// took 200 passes, the last ones each reading 100 000 tasks (minutes of
// leader CPU). A pass now creates as many as the service holds, at least
// a batch: 1 000 replicas in batches of 10 take 8 passes (10, 10, 20, 40,
// 80, 160, 320, 360), not 100.
func TestCreatingABigServiceTakesFewPasses(t *testing.T) {
	h := newHarness(t)
	h.o = New(h.st, WithClock(h.clock.Now), WithBatchSize(10))
	h.createService(replicated("web", 1000))
	d := newDirty()
	passes := 0
	for ; passes == 0 || len(d.services) > 0; passes++ {
		if passes == 100 {
			t.Fatalf("work left after %d passes", passes)
		}
		if err := h.o.reconcile(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(h.liveTasks("web")); got != 1000 {
		t.Fatalf("%d tasks after %d passes, want 1000", got, passes)
	}
	if passes > 8 {
		t.Fatalf("1 000 replicas took %d passes, want at most 8", passes)
	}
}
