package orchestrator

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// rolled sets up svc with replicas running img:1 on n1, then changes its
// image to img:2 under policy (nil: the defaults).
func rolled(t *testing.T, replicas uint64, policy *api.UpdatePolicy) *harness {
	t.Helper()
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	svc := replicated("web", replicas)
	svc.Spec.Update = policy
	h.createService(svc)
	h.step()
	h.runningOn("web", "n1")
	h.clock.Advance(time.Minute)
	h.changeService("web", func(s *api.ServiceSpec) { s.Image = "img:2" })
	h.step()
	return h
}

// liveWith returns the live tasks running the spec with image.
func (h *harness) liveWith(image string) []*api.Task {
	var out []*api.Task
	for _, t := range h.liveTasks("web") {
		if t.Spec.GetImage() == image {
			out = append(out, t)
		}
	}
	return out
}

func (h *harness) updateState() api.UpdateState {
	return h.service("web").GetUpdateStatus().GetState()
}

// The case the pause is for (docs/adr/0025-update-machine.md): a bad spec
// whose replica fails at once pauses the update after that one replica,
// leaving the others running the old spec, and says which replica failed
// and why.
func TestBadUpdatePausesAfterFirstFailure(t *testing.T) {
	h := rolled(t, 3, nil)
	first := h.liveWith("img:2")
	if len(first) != 1 || len(h.liveWith("img:1")) != 2 {
		t.Fatalf("want one slot replaced first\n%s", h.dump())
	}
	h.update(func(tx *store.Tx) error {
		task := tx.GetTask(first[0].Id)
		task.NodeId = "n1"
		task.Status = &api.TaskStatus{State: sFailed, ExitCode: 1, Reason: "exit_code", Message: "launch exited with status 1"}
		return tx.Update(task)
	})
	for range 3 {
		h.step()
		h.clock.Advance(10 * time.Second)
	}
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_PAUSED {
		t.Fatalf("state %v after the first replica failed, want paused\n%s", got, h.dump())
	}
	msg := h.service("web").UpdateStatus.Message
	for _, want := range []string{"update paused", "web.1", first[0].Id, "host-n1", "exit_code", "launch exited with status 1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("pause message %q does not name %q", msg, want)
		}
	}
	if old := h.liveWith("img:1"); len(old) != 2 {
		t.Fatalf("%d old replicas still live, want 2: a paused update replaces nothing more\n%s", len(old), h.dump())
	}
	if !h.task(first[0].Id).Unstable {
		t.Error("the failed replica is not marked unstable")
	}
}

// failure action rollback returns every slot to the previous spec, under
// the rollback policy, and ends in rollback_completed.
func TestFailureActionRollback(t *testing.T) {
	h := rolled(t, 3, &api.UpdatePolicy{Parallelism: 1, FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK})
	first := h.liveWith("img:2")[0]
	h.report(first.Id, "n1", sRunning, 0)
	h.clock.Advance(time.Second) // fails within the monitor period
	h.report(first.Id, "n1", sFailed, 1)
	h.step()
	svc := h.service("web")
	if svc.UpdateStatus.GetState() != api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED || svc.Spec.Image != "img:1" || svc.PreviousSpec.GetImage() != "img:2" {
		t.Fatalf("after the failure: state %v image %s previous %s, want rollback_started to img:1",
			svc.UpdateStatus.GetState(), svc.Spec.Image, svc.PreviousSpec.GetImage())
	}
	for range 5 {
		h.runningOn("web", "n1")
		h.clock.Advance(rollout.DefaultMonitor)
		h.step()
	}
	for _, task := range h.liveTasks("web") {
		if task.Spec.GetImage() != "img:1" {
			t.Errorf("slot %d runs %s after the rollback", task.Slot, task.Spec.GetImage())
		}
	}
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_ROLLBACK_COMPLETED {
		t.Errorf("state %v, want rollback_completed\n%s", got, h.dump())
	}
}

// start-first keeps every slot's old replica running until its
// replacement runs: at every step at least N replicas run.
func TestStartFirstKeepsReplicasRunning(t *testing.T) {
	const n = 3
	h := rolled(t, n, &api.UpdatePolicy{Parallelism: 1, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST, Monitor: durationpb.New(time.Second)})
	for i := 0; h.updateState() != api.UpdateState_UPDATE_STATE_COMPLETED; i++ {
		if i == 20 {
			t.Fatalf("update not completed after %d rounds\n%s", i, h.dump())
		}
		running := 0
		for _, task := range h.tasks("web") {
			if task.DesiredState == sRunning && state(task) == sRunning {
				running++
			}
		}
		if running < n {
			t.Fatalf("round %d: %d replicas running and wanted running, want at least %d\n%s", i, running, n, h.dump())
		}
		for _, task := range h.liveWith("img:2") {
			if state(task) != sRunning {
				h.report(task.Id, "n1", sRunning, 0)
			}
		}
		h.step()
		h.clock.Advance(time.Second)
		h.step()
	}
	if old := h.liveWith("img:1"); len(old) != 0 {
		t.Errorf("%d old replicas live after the update completed\n%s", len(old), h.dump())
	}
}

// parallelism 2 with a delay replaces two slots at a time, the next pair
// no earlier than delay after the first pair became stable.
func TestParallelismAndDelay(t *testing.T) {
	h := rolled(t, 4, &api.UpdatePolicy{Parallelism: 2, Delay: durationpb.New(time.Second), Monitor: durationpb.New(0)})
	pair := h.liveWith("img:2")
	if len(pair) != 2 {
		t.Fatalf("%d slots replaced at first, want 2\n%s", len(pair), h.dump())
	}
	for _, task := range pair {
		h.report(task.Id, "n1", sRunning, 0)
	}
	h.step()
	if got := len(h.liveWith("img:2")); got != 2 {
		t.Fatalf("%d new replicas before the delay passed, want 2\n%s", got, h.dump())
	}
	h.clock.Advance(999 * time.Millisecond)
	h.step()
	if got := len(h.liveWith("img:2")); got != 2 {
		t.Fatalf("%d new replicas 999ms into the 1s delay, want 2", got)
	}
	h.clock.Advance(time.Millisecond)
	h.step()
	if got := len(h.liveWith("img:2")); got != 4 {
		t.Fatalf("%d new replicas once the delay passed, want 4\n%s", got, h.dump())
	}
}

// A leader change mid-update: a new orchestrator on the same store goes
// on from the slots already replaced and replaces each slot once.
func TestNewLeaderContinuesTheUpdate(t *testing.T) {
	h := rolled(t, 3, nil)
	h.runningOn("web", "n1")
	h.clock.Advance(rollout.DefaultMonitor)
	h.step() // slot 2 replaced by the first leader
	h.o = New(h.st, WithClock(h.clock.Now))
	for range 4 {
		h.runningOn("web", "n1")
		h.clock.Advance(rollout.DefaultMonitor)
		h.step()
	}
	perSlot := map[uint64]int{}
	for _, task := range h.tasks("web") {
		if task.Spec.GetImage() == "img:2" {
			perSlot[task.Slot]++
		}
	}
	for slot := uint64(1); slot <= 3; slot++ {
		if perSlot[slot] != 1 {
			t.Errorf("slot %d got %d replicas of the new spec, want 1\n%s", slot, perSlot[slot], h.dump())
		}
	}
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_COMPLETED {
		t.Errorf("state %v, want completed", got)
	}
}

// max_failure_ratio lets that share of the slots fail under continue:
// the update carries on past failed slots.
func TestFailureRatioAndContinue(t *testing.T) {
	h := rolled(t, 4, &api.UpdatePolicy{Parallelism: 1, MaxFailureRatio: 0.5, Monitor: durationpb.New(time.Second)})
	fail := func() {
		t.Helper()
		for _, task := range h.liveWith("img:2") {
			if state(task) < sRunning {
				h.report(task.Id, "n1", sFailed, 1)
				h.step()
				return
			}
		}
		t.Fatalf("no new replica to fail\n%s", h.dump())
	}
	fail()
	fail() // two of four: not above the ratio
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_UPDATING {
		t.Fatalf("state %v after 2 of 4 slots failed with ratio 0.5, want updating", got)
	}
	fail()
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_PAUSED {
		t.Fatalf("state %v after 3 of 4 failed, want paused", got)
	}

	h = rolled(t, 3, &api.UpdatePolicy{Parallelism: 1, FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE, Monitor: durationpb.New(time.Second)})
	fail()
	if got := len(h.liveWith("img:1")); got != 1 {
		t.Errorf("%d old replicas after the first slot failed under continue, want 1: the next slot goes on\n%s", got, h.dump())
	}
}

// The monitor period is timed by the orchestrator's own loop: the update
// completes though nothing in the store changes once the replicas run.
func TestUpdateCompletesOnTheClock(t *testing.T) {
	st, _ := storetest.NewWithProposer(t)
	o := New(st)
	h := &harness{t: t, st: st, o: o}
	h.setNode(readyNode("n1", nil))
	svc := replicated("web", 1)
	svc.Spec.Update = &api.UpdatePolicy{Parallelism: 1, Monitor: durationpb.New(100 * time.Millisecond)}
	h.createService(svc)
	h.run()
	h.waitFor("a replica", func() bool { return len(h.liveTasks("web")) == 1 })
	h.update(func(tx *store.Tx) error {
		s := tx.GetService("web")
		s.PreviousSpec = s.Spec
		s.Spec = replicated("web", 1).Spec
		s.Spec.Update = svc.Spec.Update
		s.Spec.Image = "img:2"
		s.SpecVersion++
		s.UpdateStatus = &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_UPDATING, StartedAt: nowPB()}
		return tx.Update(s)
	})
	h.waitFor("the new replica", func() bool { return len(h.liveWith("img:2")) == 1 })
	h.update(func(tx *store.Tx) error {
		task := tx.GetTask(h.liveWith("img:2")[0].Id)
		task.NodeId = "n1"
		task.Status = &api.TaskStatus{State: sRunning}
		task.RunningSince = nowPB()
		return tx.Update(task)
	})
	h.waitFor("the update to complete", func() bool { return h.updateState() == api.UpdateState_UPDATE_STATE_COMPLETED })
}

func nowPB() *timestamppb.Timestamp { return timestamppb.Now() }

// A global service's update completes though a paused node keeps its old
// replica: no new task may go there.
func TestGlobalUpdateCompletesPastPausedNode(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(global("agent"))
	h.step()
	h.runningOn("agent", "")
	h.changeNode("n2", func(n *api.Node) { n.Availability = api.NodeAvailability_NODE_AVAILABILITY_PAUSE })
	h.changeService("agent", func(s *api.ServiceSpec) { s.Image = "img:2" })
	for range 3 {
		h.step()
		h.runningOn("agent", "")
		h.clock.Advance(rollout.DefaultMonitor)
	}
	h.step()
	if got := h.service("agent").GetUpdateStatus().GetState(); got != api.UpdateState_UPDATE_STATE_COMPLETED {
		t.Fatalf("state %v, want completed\n%s", got, h.dump())
	}
	ts := wantNodes(t, h, "agent", "n1", "n2")
	if ts[0].Spec.GetImage() != "img:2" || ts[1].Spec.GetImage() != "img:1" {
		t.Errorf("n1 runs %s, n2 runs %s: want n1 updated and the paused n2 left alone", ts[0].Spec.GetImage(), ts[1].Spec.GetImage())
	}
}

// Resuming a paused update (the Control API restarts started_at) forgets
// the failures before it: the update goes on until a new one fails.
func TestResumeForgetsEarlierFailures(t *testing.T) {
	h := rolled(t, 3, nil)
	first := h.liveWith("img:2")[0]
	h.report(first.Id, "n1", sFailed, 1)
	h.step()
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_PAUSED {
		t.Fatalf("state %v, want paused", got)
	}
	h.clock.Advance(time.Minute)
	// The store stamps created_at with the real clock, as the Control API
	// stamps a resume's started_at.
	h.update(func(tx *store.Tx) error {
		s := tx.GetService("web")
		s.UpdateStatus = &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_UPDATING, StartedAt: timestamppb.Now()}
		return tx.Update(s)
	})
	for range 6 {
		h.step()
		h.runningOn("web", "n1")
		h.clock.Advance(rollout.DefaultMonitor)
	}
	h.step()
	if got := h.updateState(); got != api.UpdateState_UPDATE_STATE_COMPLETED {
		t.Fatalf("state %v (%s) after the resumed update's replicas ran, want completed\n%s", got, h.service("web").UpdateStatus.GetMessage(), h.dump())
	}
}
