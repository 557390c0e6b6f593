package orchestrator

import (
	"fmt"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func TestRunFollowsTheStore(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.run()
	h.createService(replicated("web", 3))
	h.waitFor("3 live tasks", func() bool { return len(h.liveTasks("web")) == 3 })

	ts := h.liveTasks("web")
	h.report(ts[0].Id, "n1", sRunning, 0)
	h.report(ts[1].Id, "n2", sRunning, 0)
	h.report(ts[2].Id, "n2", sRunning, 0)
	h.changeNode("n2", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.waitFor("slots 2 and 3 replaced", func() bool {
		got := h.liveTasks("web")
		return len(got) == 3 && got[0].Id == ts[0].Id && got[1].Id != ts[1].Id && got[2].Id != ts[2].Id
	})

	h.removeService("web")
	h.waitFor("only the running task left, told to stop", func() bool {
		got := h.tasks("web")
		return len(got) == 1 && got[0].Id == ts[0].Id && got[0].DesiredState == sShutdown
	})
	h.report(ts[0].Id, "", sShutdown, 0)
	h.waitFor("no tasks", func() bool { return len(h.tasks("web")) == 0 })
}

func TestRunStartsFromExistingState(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicated("web", 2))
	h.createService(global("agent"))
	h.run()
	h.waitFor("tasks of both services", func() bool {
		return len(h.liveTasks("web")) == 2 && len(h.liveTasks("agent")) == 1
	})
}

func TestVersionConflictIsRetried(t *testing.T) {
	h := newHarness(t)
	h.createService(replicated("web", 2))
	// Three proposals are refused as if another writer's entry had
	// committed first.
	conflicts := 3
	h.p.SetHook(func(func([]*api.StoreAction) error) error {
		if conflicts == 0 {
			return nil
		}
		conflicts--
		return fmt.Errorf("apply: %w", store.ErrVersionConflict)
	})
	h.step()
	if conflicts != 0 {
		t.Fatalf("%d refusals not reached: the pass did not propose as many times", conflicts)
	}
	wantSlots(t, h, "web", 1, 2)
}

func TestBigChangesAreSplitIntoBatches(t *testing.T) {
	h := newHarness(t)
	h.o = New(h.st, WithClock(h.clock.Now), WithBatchSize(3))
	h.createService(replicated("web", 10))
	before := h.p.Proposals()
	h.step()
	wantSlots(t, h, "web", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	if n := h.p.Proposals() - before; n < 4 {
		t.Fatalf("10 creates in %d proposals with batch size 3", n)
	}
}
