package manager

import (
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/metrics/metricstest"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// TestClusterStateMetrics: what an operator alerts on is counted from the
// store, by the words the CLI shows.
func TestClusterStateMetrics(t *testing.T) {
	st := storetest.New(t)
	pending := func(id, reason string) *api.Task {
		return &api.Task{Id: id, ServiceId: "s1", Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_PENDING, Reason: reason}}
	}
	storetest.Create(t, st,
		&api.Node{Id: "n1", Hostname: "a", Role: api.NodeRole_NODE_ROLE_MANAGER,
			Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}},
		&api.Node{Id: "n2", Hostname: "b", Role: api.NodeRole_NODE_ROLE_WORKER, Availability: api.NodeAvailability_NODE_AVAILABILITY_DRAIN,
			Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_DOWN},
			Drain:  &api.NodeDrain{State: api.DrainState_DRAIN_STATE_TIMED_OUT}},
		&api.Service{Id: "s1", Spec: &api.ServiceSpec{Name: "web"},
			UpdateStatus: &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED}},
		&api.Service{Id: "s2", Spec: &api.ServiceSpec{Name: "db"}},
		pending("t1", "no_suitable_node"), pending("t2", "no_suitable_node"), pending("t3", ""),
		&api.Task{Id: "t4", ServiceId: "s1", Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}},
	)
	got := metricstest.Samples(t, clusterState{st})
	want := map[string]float64{
		`jaco_scheduler_pending_replicas{reason="no_suitable_node"}`:              2,
		`jaco_scheduler_pending_replicas{reason="none"}`:                          1,
		`jaco_orchestrator_updates{state="rollback_paused"}`:                      1,
		`jaco_orchestrator_drains{state="timed_out"}`:                             1,
		`jaco_cluster_nodes{availability="active",role="manager",status="ready"}`: 1,
		`jaco_cluster_nodes{availability="drain",role="worker",status="down"}`:    1,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	nonzero := 0
	for _, v := range got {
		if v != 0 {
			nonzero++
		}
	}
	if nonzero != len(want) {
		t.Errorf("samples %v, want no other non-zero one than %v (a service never updated, a node never drained count nowhere)", got, want)
	}
	// The words alerts name are served at 0 rather than left out.
	for _, name := range []string{`jaco_orchestrator_updates{state="paused"}`, `jaco_orchestrator_drains{state="draining"}`,
		`jaco_scheduler_pending_replicas{reason="waiting_on_dependency"}`} {
		if v, ok := got[name]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0", name, v, ok)
		}
	}
}
