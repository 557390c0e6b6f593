package orchestrator

import (
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
)

func wantNodes(t *testing.T, h *harness, svcID string, want ...string) []*api.Task {
	t.Helper()
	ts := h.liveTasks(svcID)
	if got := nodesOf(ts); !slices.Equal(got, want) {
		t.Fatalf("live tasks on %v, want %v\n%s", got, want, h.dump())
	}
	for _, task := range ts {
		if task.Slot != 0 || task.GetStatus().GetState() != sPending && task.GetStatus().GetState() != sRunning {
			t.Fatalf("global task %v", task)
		}
	}
	return ts
}

func TestGlobalFollowsNodes(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"n1", "n2", "n3"} {
		h.setNode(readyNode(id, map[string]string{"zone": "a"}))
	}
	h.setNode(readyNode("other", map[string]string{"zone": "b"}))
	h.createService(global("agent", "node.labels.zone==a"))
	h.step()
	wantNodes(t, h, "agent", "n1", "n2", "n3")
	h.runningOn("agent", "")

	h.setNode(readyNode("n4", map[string]string{"zone": "a"}))
	h.step()
	wantNodes(t, h, "agent", "n1", "n2", "n3", "n4")

	h.changeNode("n1", func(n *api.Node) { n.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN })
	h.step()
	wantNodes(t, h, "agent", "n2", "n3", "n4")

	// A paused node keeps its task.
	h.changeNode("n2", func(n *api.Node) { n.Availability = api.NodeAvailability_NODE_AVAILABILITY_PAUSE })
	h.step()
	wantNodes(t, h, "agent", "n2", "n3", "n4")

	// UNKNOWN (a new leader has not heard from the node yet) is not down.
	h.changeNode("n3", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_UNKNOWN })
	h.step()
	wantNodes(t, h, "agent", "n2", "n3", "n4")

	h.changeNode("n3", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
	h.step()
	wantNodes(t, h, "agent", "n2", "n4")
	var onN3 []*api.Task
	for _, task := range h.tasks("agent") {
		if task.NodeId == "n3" {
			onN3 = append(onN3, task)
		}
	}
	if len(onN3) != 1 || onN3[0].GetStatus().GetState() != sOrphaned || onN3[0].DesiredState != sShutdown {
		t.Fatalf("task on down n3: want one, ORPHANED and desired SHUTDOWN\n%s", h.dump())
	}

	// Back: a fresh task; the orphaned one stays stopped.
	h.changeNode("n3", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_READY })
	h.step()
	ts := wantNodes(t, h, "agent", "n2", "n3", "n4")
	if ts[1].Id == onN3[0].Id {
		t.Fatalf("orphaned task made live again")
	}

	// Labels change: n4 no longer matches.
	h.changeNode("n4", func(n *api.Node) { n.Labels["zone"] = "b" })
	h.step()
	wantNodes(t, h, "agent", "n2", "n3")
}

func TestGlobalRestartStaysOnNode(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(global("agent"))
	h.step()
	first := wantNodes(t, h, "agent", "n1")[0]
	h.report(first.Id, "", sFailed, 1)
	h.step()
	ts := wantNodes(t, h, "agent", "n1")
	if ts[0].Id == first.Id || ts[0].NotBefore == nil {
		t.Fatalf("want a restart attempt on n1\n%s", h.dump())
	}
}

func TestGlobalSpecUpdateRollsNodeByNode(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(global("agent"))
	h.step()
	h.runningOn("agent", "")
	h.changeService("agent", func(s *api.ServiceSpec) { s.Image = "img:2" })
	h.step()
	ts := wantNodes(t, h, "agent", "n1", "n2")
	if ts[0].SpecVersion != 2 || ts[1].SpecVersion != 1 {
		t.Fatalf("want n1 replaced first, n2 still old\n%s", h.dump())
	}
	h.report(ts[0].Id, "", sRunning, 0)
	h.clock.Advance(rollout.DefaultMonitor)
	h.step()
	ts = wantNodes(t, h, "agent", "n1", "n2")
	if ts[1].SpecVersion != 2 {
		t.Fatalf("n2 not replaced after n1 ran\n%s", h.dump())
	}
}

func TestGlobalRemoveService(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(global("agent"))
	h.step()
	h.removeService("agent")
	h.step()
	if n := len(h.tasks("agent")); n != 0 {
		t.Fatalf("%d tasks left\n%s", n, h.dump())
	}
}

// A node whose hostname comes only from its agent's description (the
// hostname constraints read it so) changes for the global reconciler when
// that description does.
func TestNodeChangedReadsTheHostnameConstraintsRead(t *testing.T) {
	old := &api.Node{Id: "n1", Description: &api.NodeDescription{Hostname: "a"}}
	renamed := &api.Node{Id: "n1", Description: &api.NodeDescription{Hostname: "b"}}
	if !nodeChanged(old, renamed) {
		t.Fatal("a new hostname from the description is not a change")
	}
	if nodeChanged(old, old) {
		t.Fatal("an unchanged node is a change")
	}
}
