package orchestrator

import (
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
)

const (
	sPending  = api.TaskState_TASK_STATE_PENDING
	sRunning  = api.TaskState_TASK_STATE_RUNNING
	sComplete = api.TaskState_TASK_STATE_COMPLETE
	sShutdown = api.TaskState_TASK_STATE_SHUTDOWN
	sFailed   = api.TaskState_TASK_STATE_FAILED
	sOrphaned = api.TaskState_TASK_STATE_ORPHANED
)

func wantSlots(t *testing.T, h *harness, svcID string, want ...uint64) []*api.Task {
	t.Helper()
	ts := h.liveTasks(svcID)
	if got := slotsOf(ts); !slices.Equal(got, want) {
		t.Fatalf("live slots = %v, want %v\n%s", got, want, h.dump())
	}
	return ts
}

func TestCreateMakesPendingTasksInSlots(t *testing.T) {
	h := newHarness(t)
	svc := h.createService(replicated("web", 3))
	h.step()
	ts := wantSlots(t, h, "web", 1, 2, 3)
	for _, task := range ts {
		if task.ServiceName != "web" || task.SpecVersion != 1 || task.Spec.GetImage() != "img:1" ||
			task.NodeId != "" || task.NotBefore != nil ||
			task.GetStatus().GetState() != sPending || !task.GetStatus().GetTimestamp().AsTime().Equal(epoch) {
			t.Errorf("task %v, want pending copy of %v", task, svc)
		}
	}
}

func TestScaleUpAndDown(t *testing.T) {
	h := newHarness(t)
	h.createService(replicated("web", 3))
	h.step()
	h.changeService("web", func(s *api.ServiceSpec) { s.Replicas = 5 })
	h.step()
	wantSlots(t, h, "web", 1, 2, 3, 4, 5)
	h.changeService("web", func(s *api.ServiceSpec) { s.Replicas = 1 })
	h.step()
	wantSlots(t, h, "web", 1)
	// Never assigned, the removed ones are gone, not kept as history.
	if n := len(h.tasks("web")); n != 1 {
		t.Fatalf("%d tasks left, want 1\n%s", n, h.dump())
	}
}

func TestScaleDownPrefersNotRunningThenMostLoadedNode(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicated("web", 4))
	h.step()
	ts := h.liveTasks("web")
	h.report(ts[0].Id, "n1", sRunning, 0)
	h.report(ts[1].Id, "n2", sRunning, 0)
	h.report(ts[2].Id, "n2", sRunning, 0)
	// slot 4 stays pending.
	h.changeService("web", func(s *api.ServiceSpec) { s.Replicas = 2 })
	h.step()
	wantSlots(t, h, "web", 1, 2)
	var slot3 *api.Task
	for _, task := range h.tasks("web") {
		if task.Slot == 4 {
			t.Fatalf("pending slot 4 kept: %v", task)
		}
		if task.Slot == 3 {
			slot3 = task
		}
	}
	if slot3 == nil || slot3.DesiredState != sShutdown {
		t.Fatalf("slot 3 (running on the most loaded node) = %v, want desired SHUTDOWN", slot3)
	}
	// Once stopped it is deleted: its slot is gone.
	h.report(slot3.Id, "", sShutdown, 0)
	h.step()
	if n := len(h.tasks("web")); n != 2 {
		t.Fatalf("%d tasks, want 2\n%s", n, h.dump())
	}
}

func TestSpecUpdateRollsOneSlotAtATime(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicated("web", 3))
	h.step()
	h.runningOn("web", "n1")
	h.changeService("web", func(s *api.ServiceSpec) { s.Image = "img:2" })
	for slot := uint64(1); slot <= 3; slot++ {
		h.step()
		ts := wantSlots(t, h, "web", 1, 2, 3)
		for _, task := range ts {
			wantNew := task.Slot <= slot
			if (task.SpecVersion == 2) != wantNew || (task.Spec.GetImage() == "img:2") != wantNew {
				t.Fatalf("after rolling slot %d: slot %d has spec v%d %s\n%s", slot, task.Slot, task.SpecVersion, task.Spec.GetImage(), h.dump())
			}
		}
		// The replaced task was told to stop.
		for _, task := range h.tasks("web") {
			if task.Slot == slot && task.SpecVersion == 1 && task.DesiredState != sShutdown {
				t.Fatalf("old task of slot %d desired %s, want SHUTDOWN", slot, task.DesiredState)
			}
		}
		h.report(ts[slot-1].Id, "n1", sRunning, 0)
		// Running is not enough: the next slot waits until the new
		// replica has run for the monitor period.
		h.step()
		if slot < 3 {
			if next := wantSlots(t, h, "web", 1, 2, 3)[slot]; next.SpecVersion != 1 {
				t.Fatalf("slot %d replaced before slot %d was stable\n%s", slot+1, slot, h.dump())
			}
		}
		h.clock.Advance(rollout.DefaultMonitor)
	}
	h.step()
	for _, task := range h.liveTasks("web") {
		if task.SpecVersion != 2 {
			t.Fatalf("slot %d still at spec v%d", task.Slot, task.SpecVersion)
		}
	}
	if got := h.service("web").UpdateStatus; got.GetState() != api.UpdateState_UPDATE_STATE_COMPLETED || got.CompletedAt == nil {
		t.Errorf("update status %v after every slot ran stable, want completed", got)
	}
}

func TestSpecUpdateReplacesNotYetRunningTasksAtOnce(t *testing.T) {
	h := newHarness(t)
	h.createService(replicated("web", 3))
	h.step()
	h.changeService("web", func(s *api.ServiceSpec) { s.Image = "img:2" })
	h.step()
	for _, task := range h.tasks("web") {
		if task.SpecVersion != 2 {
			t.Fatalf("pending task of old spec kept: %v\n%s", task, h.dump())
		}
	}
	wantSlots(t, h, "web", 1, 2, 3)
}

func TestRemoveService(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicated("web", 3))
	h.step()
	ts := h.liveTasks("web")
	h.report(ts[0].Id, "n1", sRunning, 0)
	h.removeService("web")
	h.step()
	left := h.tasks("web")
	if len(left) != 1 || left[0].Id != ts[0].Id || left[0].DesiredState != sShutdown {
		t.Fatalf("after remove: want only the running task, desired SHUTDOWN\n%s", h.dump())
	}
	h.report(ts[0].Id, "", sShutdown, 0)
	h.step()
	if n := len(h.tasks("web")); n != 0 {
		t.Fatalf("%d tasks left after they stopped\n%s", n, h.dump())
	}
}
