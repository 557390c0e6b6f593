package orchestrator

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// lose marks node id lost by the managers now, in state st.
func (h *harness) lose(id string, st api.NodeStatusState) {
	h.t.Helper()
	h.changeNode(id, func(n *api.Node) {
		n.Status = &api.NodeStatus{State: st, Timestamp: timestamppb.New(h.clock.Now())}
	})
}

// graceCase runs web's two replicas on n1 and n2 and loses n2 in st.
func graceCase(t *testing.T, cluster *api.Cluster, st api.NodeStatusState) (*harness, *api.Task) {
	h := newHarness(t)
	if cluster != nil {
		h.update(func(tx *store.Tx) error { return tx.Create(cluster) })
	}
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicated("web", 2))
	h.step()
	ts := h.liveTasks("web")
	h.report(ts[0].Id, "n1", sRunning, 0)
	h.report(ts[1].Id, "n2", sRunning, 0)
	h.lose("n2", st)
	h.step()
	return h, ts[1]
}

func (h *harness) stillHolds(task *api.Task) {
	h.t.Helper()
	got := h.liveTasks("web")
	if len(got) != 2 || got[1].Id != task.Id {
		h.t.Fatalf("slot 2 replaced within the grace\n%s", h.dump())
	}
}

func (h *harness) replaced(task *api.Task, why string) {
	h.t.Helper()
	got := h.liveTasks("web")
	if len(got) != 2 || got[1].Id == task.Id {
		h.t.Fatalf("slot 2 not replaced after the grace\n%s", h.dump())
	}
	if old := h.task(task.Id); old.GetStatus().GetState() != sOrphaned || old.GetStatus().GetReason() != why {
		h.t.Fatalf("lost replica = %v, want orphaned with reason %s", old.GetStatus(), why)
	}
}

func TestPartitionedNodeKeepsItsReplicasForThePartitionGrace(t *testing.T) {
	h, lost := graceCase(t, nil, api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED)
	h.stillHolds(lost)
	h.clock.Advance(api.DefaultPartitionGrace - time.Second)
	h.step()
	h.stillHolds(lost)
	h.clock.Advance(time.Second)
	h.step()
	h.replaced(lost, "node_partitioned")
}

func TestDownNodeReplicasReplacedAfterTheDownGrace(t *testing.T) {
	c := &api.Cluster{Id: "c", DownGrace: durationpb.New(10 * time.Second), PartitionGrace: durationpb.New(time.Hour)}
	h, lost := graceCase(t, c, api.NodeStatusState_NODE_STATUS_STATE_DOWN)
	h.stillHolds(lost)
	h.clock.Advance(10 * time.Second)
	h.step()
	h.replaced(lost, "node_down")
}

func TestPartitionedNodeBackWithinTheGraceKeepsEverything(t *testing.T) {
	h, lost := graceCase(t, nil, api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED)
	h.clock.Advance(30 * time.Second)
	h.lose("n2", api.NodeStatusState_NODE_STATUS_STATE_READY)
	h.clock.Advance(api.DefaultPartitionGrace)
	h.step()
	h.stillHolds(lost)
	if task := h.task(lost.Id); task.DesiredState != sRunning {
		t.Fatalf("replica on the returned node desired %s, want RUNNING", task.DesiredState)
	}
}

func TestGlobalReplicaOnAPartitionedNodeStaysForTheGrace(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(global("agent"))
	h.step()
	task := h.liveTasks("agent")[0]
	h.report(task.Id, "n1", sRunning, 0)
	h.lose("n1", api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED)
	h.step()
	if got := h.task(task.Id); got.DesiredState != sRunning {
		t.Fatalf("global replica desired %s within the grace, want RUNNING", got.DesiredState)
	}
	h.clock.Advance(api.DefaultPartitionGrace)
	h.step()
	if got := h.task(task.Id); got.GetStatus().GetState() != sOrphaned {
		t.Fatalf("global replica %v after the grace, want orphaned", got.GetStatus())
	}
}
