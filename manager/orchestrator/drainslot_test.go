package orchestrator

import (
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

// drainingSlot: web has one replica running on n1, which is being
// drained; its replacement is pending. n2 is ready.
func drainingSlot(t *testing.T) (h *harness, old, r *api.Task) {
	t.Helper()
	h = newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	svc := replicated("web", 1)
	svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_ANY, 0, 0, 0)
	h.createService(svc)
	h.step()
	old = h.runningOn("web", "n1")[0]
	h.startDrain("n1", 0, false, false)
	h.step()
	rs := replacementsOf(h.tasks("web"), old)
	if len(rs) != 1 {
		t.Fatalf("want one replacement\n%s", h.dump())
	}
	return h, old, rs[0]
}

func TestDrainReplacementThatFailsIsRestartedAndStillReplaces(t *testing.T) {
	h, old, r := drainingSlot(t)
	h.report(r.Id, "n2", sFailed, 1)
	h.step()
	if !live(h.task(old.Id)) {
		t.Fatalf("old replica stopped because its replacement failed\n%s", h.dump())
	}
	var again *api.Task
	for _, t := range replacementsOf(h.tasks("web"), old) {
		if live(t) {
			again = t
		}
	}
	if again == nil || again.Id == r.Id || again.NotBefore == nil {
		t.Fatalf("failed replacement not restarted as a replacement of %s\n%s", old.Id, h.dump())
	}
	h.report(again.Id, "n2", sRunning, 0)
	h.step()
	if got := h.task(old.Id).DesiredState; got != sShutdown {
		t.Fatalf("old desired %v once the restarted replacement runs, want SHUTDOWN\n%s", got, h.dump())
	}
}

func TestDrainOldReplicaEndingIsNotRestarted(t *testing.T) {
	h, old, r := drainingSlot(t)
	h.report(old.Id, "", sFailed, 1)
	h.step()
	live := h.liveTasks("web")
	if len(live) != 1 || live[0].Id != r.Id {
		t.Fatalf("after the drained replica failed, live %v, want only its replacement\n%s", live, h.dump())
	}
}

func TestDrainingNodeDownLeavesTheReplacementAlone(t *testing.T) {
	h, old, r := drainingSlot(t)
	d := h.o.newDrainer()
	h.drainPass(d, "n1")
	h.changeNode("n1", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.step()
	if got := state(h.task(old.Id)); got != sOrphaned {
		t.Fatalf("old replica on the down node %v, want ORPHANED\n%s", got, h.dump())
	}
	live := h.liveTasks("web")
	if len(live) != 1 || live[0].Id != r.Id {
		t.Fatalf("live %v, want only the existing replacement (no refill)\n%s", live, h.dump())
	}
	dr, _ := h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINED, 1, 1)
}

func TestDrainScaleDownCountsEachSlotOnce(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicated("web", 3))
	h.step()
	h.runningOn("web", "n1")
	h.startDrain("n1", time.Minute, false, false)
	h.step()
	if n := len(h.liveTasks("web")); n != 6 {
		t.Fatalf("%d live tasks while draining, want 3 old and 3 replacements\n%s", n, h.dump())
	}
	h.changeService("web", func(s *api.ServiceSpec) { s.Replicas = 1 })
	h.step()
	// Two slots emptied, each with its replacement (deleted, never
	// assigned) and its old replica (stopped).
	got := h.liveTasks("web")
	if len(got) != 2 || got[0].Slot != got[1].Slot {
		t.Fatalf("after scaling to 1 while draining, live %v, want one slot's old replica and its replacement\n%s", got, h.dump())
	}
}
