package orchestrator

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestNodeDownReplacesAndNodeBackAddsNothing(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicated("web", 2))
	h.step()
	ts := h.liveTasks("web")
	h.report(ts[0].Id, "n1", sRunning, 0)
	h.report(ts[1].Id, "n2", sRunning, 0)
	lost := ts[1]

	// UNKNOWN right after a leader change orphans nothing.
	h.changeNode("n2", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_UNKNOWN })
	h.step()
	if got := h.liveTasks("web"); len(got) != 2 || got[1].Id != lost.Id {
		t.Fatalf("UNKNOWN node's task replaced\n%s", h.dump())
	}

	h.changeNode("n2", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.step()
	ts = wantSlots(t, h, "web", 1, 2)
	if ts[1].Id == lost.Id || ts[1].NodeId != "" || ts[1].NotBefore != nil {
		t.Fatalf("slot 2: want a fresh unplaced task, not a delayed restart\n%s", h.dump())
	}
	var old *api.Task
	for _, task := range h.tasks("web") {
		if task.Id == lost.Id {
			old = task
		}
	}
	if old == nil || old.GetStatus().GetState() != sOrphaned || old.GetStatus().GetMessage() != "node down" ||
		old.DesiredState != sShutdown {
		t.Fatalf("lost task = %v, want ORPHANED \"node down\", desired SHUTDOWN", old)
	}

	// The node returns; its agent still runs the old replica and says so.
	// It is told to stop it (desired SHUTDOWN), and nothing is added.
	h.report(ts[1].Id, "n1", sRunning, 0)
	h.changeNode("n2", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_READY })
	h.report(lost.Id, "", sRunning, 0)
	h.step()
	got := wantSlots(t, h, "web", 1, 2)
	if got[1].Id != ts[1].Id {
		t.Fatalf("slot 2 changed after the node came back\n%s", h.dump())
	}
	for _, task := range h.tasks("web") {
		if task.Id == lost.Id && task.DesiredState != sShutdown {
			t.Fatalf("returned replica desired %s, want SHUTDOWN", task.DesiredState)
		}
	}
}

func TestNodeDownIgnoresRestartPolicyNone(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	svc := replicated("web", 1)
	svc.Spec.Restart = &api.RestartPolicy{Condition: api.RestartCondition_RESTART_CONDITION_NONE}
	h.createService(svc)
	h.step()
	h.report(h.liveTasks("web")[0].Id, "n1", sRunning, 0)
	h.changeNode("n1", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.step()
	wantSlots(t, h, "web", 1)
}

func TestTasksOnDownNodeDoNotLinger(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicated("web", 2))
	h.step()
	ts := h.liveTasks("web")
	h.report(ts[0].Id, "n1", sRunning, 0)
	h.report(ts[1].Id, "n2", sRunning, 0)
	// Scaled down while its node is down: the stopped task can never
	// report SHUTDOWN, and must not stay forever.
	h.changeService("web", func(s *api.ServiceSpec) { s.Replicas = 1 })
	h.step()
	h.changeNode("n2", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.step()
	wantSlots(t, h, "web", 1)
	if n := len(h.tasks("web")); n != 1 {
		t.Fatalf("%d tasks, want 1\n%s", n, h.dump())
	}
	// Removing the service while n1 is down leaves nothing behind.
	h.changeNode("n1", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.removeService("web")
	h.step()
	if n := len(h.tasks("web")); n != 0 {
		t.Fatalf("%d tasks left\n%s", n, h.dump())
	}
}
