package dashboard

import (
	"reflect"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func node(id, host string, role api.NodeRole, status api.NodeStatusState) *api.StoreAction {
	return &api.StoreAction{Target: &api.StoreAction_Node{Node: &api.Node{Id: id, Meta: &api.Meta{}, Hostname: host, Role: role,
		Address: host + ":7000", Status: &api.NodeStatus{State: status}}}}
}

func service(id, name string, replicas uint64, update *api.UpdateStatus) *api.StoreAction {
	return &api.StoreAction{Target: &api.StoreAction_Service{Service: &api.Service{Id: id, Meta: &api.Meta{},
		Spec: &api.ServiceSpec{Name: name, Replicas: replicas}, UpdateStatus: update}}}
}

func task(id, serviceID, serviceName string, slot uint64, nodeID string, desired, state api.TaskState, reason string) *api.StoreAction {
	return &api.StoreAction{Target: &api.StoreAction_Task{Task: &api.Task{Id: id, Meta: &api.Meta{}, ServiceId: serviceID,
		ServiceName: serviceName, Slot: slot, NodeId: nodeID, DesiredState: desired,
		Status: &api.TaskStatus{State: state, Reason: reason, Message: "waiting"}}}}
}

func TestReadState(t *testing.T) {
	f := newFakeManager(t)
	f.members = append(f.members, &api.Member{NodeId: "n2", Status: api.MemberStatus_MEMBER_STATUS_UNREACHABLE, Suffrage: api.Suffrage_SUFFRAGE_NONVOTER})
	running, shutdown, pending := api.TaskState_TASK_STATE_RUNNING, api.TaskState_TASK_STATE_SHUTDOWN, api.TaskState_TASK_STATE_PENDING
	f.apply(t,
		node("n1", "m1", api.NodeRole_NODE_ROLE_MANAGER, api.NodeStatusState_NODE_STATUS_STATE_READY),
		node("n2", "m2", api.NodeRole_NODE_ROLE_MANAGER, api.NodeStatusState_NODE_STATUS_STATE_DOWN),
		node("n3", "w1", api.NodeRole_NODE_ROLE_WORKER, api.NodeStatusState_NODE_STATUS_STATE_READY),
		service("s1", "web", 3, &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_PAUSED, Message: "web.2 failed"}),
		service("s2", "db", 1, &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_COMPLETED}),
		task("t1", "s1", "web", 1, "n1", running, running, ""),
		task("t2", "s1", "web", 2, "n3", running, running, ""),
		task("t3", "s1", "web", 3, "", running, pending, "no_suitable_node"),
		// History: an old replica that ended is left out.
		task("t4", "s1", "web", 1, "n3", shutdown, shutdown, ""),
		task("t5", "s2", "db", 1, "n1", running, api.TaskState_TASK_STATE_STARTING, ""),
	)
	st := ReadState(f)

	if st.ServedBy != "m1" || st.ClusterID != "c0ffee0123456789" {
		t.Errorf("served by %q, cluster %q", st.ServedBy, st.ClusterID)
	}
	wantRaft := Raft{LeaderKnown: true, Leader: "m1", Term: 3, Commit: 42, Applied: 41, Members: 2, Voters: 1}
	if st.Raft != wantRaft {
		t.Errorf("raft %+v, want %+v", st.Raft, wantRaft)
	}
	wantNodes := []Node{
		{ID: "n1", Hostname: "m1", Address: "m1:7000", Role: "manager", Availability: "active", Status: "ready",
			Manager: &Member{Leader: true, Suffrage: "voter", Reachability: "ready"}},
		{ID: "n2", Hostname: "m2", Address: "m2:7000", Role: "manager", Availability: "active", Status: "down",
			Manager: &Member{Suffrage: "nonvoter", Reachability: "unreachable"}},
		{ID: "n3", Hostname: "w1", Address: "w1:7000", Role: "worker", Availability: "active", Status: "ready"},
	}
	if !reflect.DeepEqual(st.Nodes, wantNodes) {
		t.Errorf("nodes\n%+v\nwant\n%+v", st.Nodes, wantNodes)
	}
	wantServices := []Service{
		{ID: "s2", Name: "db", Mode: "replicated", Wanted: 1, Running: 0, Update: "completed",
			Nodes: []Placement{{Node: "m1", States: []StateCount{{"starting", 1}}}}},
		{ID: "s1", Name: "web", Mode: "replicated", Wanted: 3, Running: 2, Update: "paused", UpdateMessage: "web.2 failed",
			Nodes: []Placement{
				{Node: "", States: []StateCount{{"pending", 1}}},
				{Node: "m1", States: []StateCount{{"running", 1}}},
				{Node: "w1", States: []StateCount{{"running", 1}}},
			}},
	}
	if !reflect.DeepEqual(st.Services, wantServices) {
		t.Errorf("services\n%+v\nwant\n%+v", st.Services, wantServices)
	}
	wantPending := []Pending{{Service: "web", Replica: "web.3", Reason: "no_suitable_node", Message: "waiting"}}
	if !reflect.DeepEqual(st.Pending, wantPending) {
		t.Errorf("pending %+v, want %+v", st.Pending, wantPending)
	}
	// A completed update is history; a paused one is in progress.
	wantUpdates := []Update{{Service: "web", State: "paused", Message: "web.2 failed"}}
	if !reflect.DeepEqual(st.Updates, wantUpdates) {
		t.Errorf("updates %+v, want %+v", st.Updates, wantUpdates)
	}
}
