package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/internal/testclock"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t     *testing.T
	st    *store.Store
	p     *storetest.Proposer
	clock *testclock.Clock
	o     *Orchestrator
	// afterPass, when set, runs after every pass of step: a property
	// that must hold at every write, not only once a step has converged.
	afterPass func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	st, p := storetest.NewWithProposer(t)
	clock := testclock.New(epoch)
	return &harness{t: t, st: st, p: p, clock: clock, o: New(st, WithClock(clock.Now))}
}

// step runs one full reconciliation synchronously (as many passes as it
// takes), then checks that a second one finds nothing left to do: every
// decision is stable.
//
// Every pass is also checked to leave the objects it read from the store
// as they were: a pass reads tasks as shallow copies, which share their
// messages with the store, so a message changed in place would change
// the store without a write.
func (h *harness) step() {
	h.t.Helper()
	d := newDirty()
	for passes := 0; passes == 0 || len(d.services) > 0; passes++ {
		if passes == 1000 {
			h.t.Fatalf("work left after %d passes: %v", passes, d.services)
		}
		stored := h.storedTasks()
		if err := h.o.reconcile(context.Background(), d); err != nil {
			h.t.Fatalf("reconcile: %v", err)
		}
		if h.afterPass != nil {
			h.afterPass()
		}
		for shared, was := range stored {
			if !proto.Equal(shared, was) {
				h.t.Fatalf("a pass changed stored task %s in place:\nnow %v\nwas %v", was.GetId(), shared, was)
			}
		}
	}
	before := h.p.Proposals()
	if err := h.o.reconcile(context.Background(), newDirty()); err != nil {
		h.t.Fatalf("reconcile again: %v", err)
	}
	if n := h.p.Proposals() - before; n != 0 {
		h.t.Fatalf("second reconcile wrote %d more batches; not converged:\n%s", n, h.dump())
	}
}

// storedTasks maps the store's own task objects to copies of them.
func (h *harness) storedTasks() map[*api.Task]*api.Task {
	out := map[*api.Task]*api.Task{}
	h.st.View(func(tx store.ReadTx) {
		tx.EachTask("", "", func(t *api.Task) bool {
			out[t] = proto.CloneOf(t)
			return true
		})
	})
	return out
}

// run starts the orchestrator's watch loop until the test ends.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.o.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (h *harness) update(fn func(tx *store.Tx) error) {
	h.t.Helper()
	if err := h.st.Update(context.Background(), fn); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) createService(svc *api.Service) *api.Service {
	h.t.Helper()
	if svc.SpecVersion == 0 {
		svc.SpecVersion = 1
	}
	h.update(func(tx *store.Tx) error { return tx.Create(svc) })
	return h.service(svc.Id)
}

func (h *harness) service(id string) (s *api.Service) {
	h.st.View(func(tx store.ReadTx) { s = tx.GetService(id) })
	return s
}

// changeService applies fn to the service's spec as the Control API
// does: a change that replaces replicas bumps spec_version and starts an
// update.
func (h *harness) changeService(id string, fn func(*api.ServiceSpec)) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		s := tx.GetService(id)
		spec := proto.CloneOf(s.Spec)
		fn(spec)
		if rollout.Replaces(s.Spec, spec) {
			s.PreviousSpec = s.Spec
			s.SpecVersion++
			s.UpdateStatus = &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_UPDATING, StartedAt: timestamppb.New(h.clock.Now())}
		}
		s.Spec = spec
		return tx.Update(s)
	})
}

func (h *harness) removeService(id string) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error { return tx.Delete(tx.GetService(id)) })
}

func (h *harness) setNode(n *api.Node) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		if old := tx.GetNode(n.Id); old != nil {
			n.Meta = old.Meta
			return tx.Update(n)
		}
		return tx.Create(n)
	})
}

func (h *harness) changeNode(id string, fn func(*api.Node)) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		n := tx.GetNode(id)
		fn(n)
		return tx.Update(n)
	})
}

// report writes what an agent (through scheduler and dispatcher) would.
func (h *harness) report(taskID, nodeID string, s api.TaskState, exitCode int32) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		t := tx.GetTask(taskID)
		if nodeID != "" {
			t.NodeId = nodeID
		}
		t.Status = &api.TaskStatus{State: s, ExitCode: exitCode, Timestamp: timestamppb.New(h.clock.Now())}
		if s == sRunning && t.RunningSince == nil { // as the dispatcher records it
			t.RunningSince = timestamppb.New(h.clock.Now())
		}
		return tx.Update(t)
	})
}

func (h *harness) task(id string) (t *api.Task) {
	h.st.View(func(tx store.ReadTx) { t = tx.GetTask(id) })
	return t
}

func (h *harness) node(id string) (n *api.Node) {
	h.st.View(func(tx store.ReadTx) { n = tx.GetNode(id) })
	return n
}

// runningOn makes every live task of svc run on node ("": the node each
// task names already).
func (h *harness) runningOn(svcID, node string) []*api.Task {
	h.t.Helper()
	for _, t := range h.liveTasks(svcID) {
		h.report(t.Id, node, sRunning, 0)
	}
	return h.liveTasks(svcID)
}

func (h *harness) tasks(serviceID string) (ts []*api.Task) {
	h.st.View(func(tx store.ReadTx) { ts = tx.ListTasksByService(serviceID) })
	byAge(ts)
	return ts
}

// liveTasks are the tasks that should run and have not ended, by slot.
func (h *harness) liveTasks(serviceID string) []*api.Task {
	var out []*api.Task
	for _, t := range h.tasks(serviceID) {
		if live(t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *api.Task) int {
		if a.Slot != b.Slot {
			return int(a.Slot) - int(b.Slot)
		}
		return strings.Compare(a.NodeId, b.NodeId)
	})
	return out
}

func slotsOf(ts []*api.Task) []uint64 {
	var out []uint64
	for _, t := range ts {
		out = append(out, t.Slot)
	}
	return out
}

func nodesOf(ts []*api.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.NodeId)
	}
	return out
}

func (h *harness) dump() string {
	var b strings.Builder
	h.st.View(func(tx store.ReadTx) {
		for _, t := range tx.ListTasks() {
			fmt.Fprintf(&b, "  task %.6s svc=%s slot=%d node=%q desired=%s state=%s specv=%d notBefore=%v\n",
				t.Id, t.ServiceId, t.Slot, t.NodeId, t.DesiredState, t.GetStatus().GetState(), t.SpecVersion, t.NotBefore.AsTime())
		}
	})
	return b.String()
}

// waitFor polls cond until it holds or a deadline passes.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; tasks:\n%s", what, h.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func replicated(id string, replicas uint64) *api.Service {
	return &api.Service{Id: id, Spec: &api.ServiceSpec{Name: id, Image: "img:1", Replicas: replicas}}
}

func global(id string, constraints ...string) *api.Service {
	return &api.Service{Id: id, Spec: &api.ServiceSpec{
		Name: id, Image: "img:1", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL,
		Placement: &api.Placement{Constraints: constraints},
	}}
}

func readyNode(id string, labels map[string]string) *api.Node {
	return &api.Node{Id: id, Hostname: "host-" + id, Labels: labels,
		Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}}
}

func restartPolicy(c api.RestartCondition, delay time.Duration, maxAttempts uint64, window time.Duration) *api.RestartPolicy {
	p := &api.RestartPolicy{Condition: c, Delay: durationpb.New(delay), MaxAttempts: maxAttempts}
	if window > 0 {
		p.Window = durationpb.New(window)
	}
	return p
}
