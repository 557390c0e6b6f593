package dispatcher

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

const (
	pending   = api.TaskState_TASK_STATE_PENDING
	assignedS = api.TaskState_TASK_STATE_ASSIGNED
	running   = api.TaskState_TASK_STATE_RUNNING
	shutdown  = api.TaskState_TASK_STATE_SHUTDOWN
	failed    = api.TaskState_TASK_STATE_FAILED
)

func ids(tasks []*api.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.Id)
	}
	return out
}

func TestAssigned(t *testing.T) {
	for _, tc := range []struct {
		name            string
		node            string
		desired, status api.TaskState
		want            bool
	}{
		{"assigned, to run", "n1", running, assignedS, true},
		{"running", "n1", running, running, true},
		{"failed but still desired running: the agent keeps it until told", "n1", running, failed, true},
		{"pending global replica: not accepted by the scheduler yet", "n1", running, pending, false},
		{"to stop, still running: the agent must stop it", "n1", shutdown, running, true},
		{"to stop and stopped", "n1", shutdown, shutdown, false},
		{"other node", "n2", running, running, false},
	} {
		if got := assigned("n1", task("t", tc.node, tc.desired, tc.status)); got != tc.want {
			t.Errorf("%s: assigned = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAssignmentSetChanges(t *testing.T) {
	a := newAssignmentSet("n1")
	full := a.complete([]*api.Task{
		task("b", "n1", running, running),
		task("a", "n1", running, assignedS),
		task("p", "n1", running, pending),
	})
	if got := ids(full); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("complete = %v, want [a b]", got)
	}

	steps := []struct {
		name        string
		observe     *api.Task
		deleted     bool
		wantUpdated []string
		wantRemoved []string
	}{
		{name: "status reported by the agent: no echo", observe: task("a", "n1", running, running)},
		{name: "desired state changes", observe: task("a", "n1", shutdown, running), wantUpdated: []string{"a"}},
		{name: "stopped: leaves the set", observe: task("a", "n1", shutdown, shutdown), wantRemoved: []string{"a"}},
		{name: "new spec version", observe: &api.Task{Id: "b", NodeId: "n1", DesiredState: running,
			Status: &api.TaskStatus{State: running}, SpecVersion: 2}, wantUpdated: []string{"b"}},
		{name: "restart delay set", observe: &api.Task{Id: "b", NodeId: "n1", DesiredState: running,
			Status: &api.TaskStatus{State: running}, SpecVersion: 2, NotBefore: timestamppb.New(timestamppb.Now().AsTime())},
			wantUpdated: []string{"b"}},
		{name: "pending replica accepted by the scheduler", observe: task("p", "n1", running, assignedS), wantUpdated: []string{"p"}},
		{name: "moved to another node", observe: task("p", "n2", running, assignedS), wantRemoved: []string{"p"}},
		{name: "deleted", observe: task("b", "n1", running, running), deleted: true, wantRemoved: []string{"b"}},
		{name: "deleted, never sent", observe: task("x", "n1", running, pending), deleted: true},
	}
	for _, s := range steps {
		a.observe(s.observe, s.deleted)
		updated, removed := a.changes()
		if !slices.Equal(ids(updated), s.wantUpdated) || !slices.Equal(removed, s.wantRemoved) {
			t.Fatalf("%s: updated %v removed %v; want %v, %v", s.name, ids(updated), removed, s.wantUpdated, s.wantRemoved)
		}
	}
}

func TestAssignmentSetCoalesces(t *testing.T) {
	a := newAssignmentSet("n1")
	a.complete(nil)
	// Created and deleted within one window: the agent never hears of it.
	a.observe(task("a", "n1", running, assignedS), false)
	a.observe(task("a", "n1", running, assignedS), true)
	// Three changes of one task: sent once, as last seen.
	a.observe(task("b", "n1", running, assignedS), false)
	a.observe(task("b", "n1", shutdown, assignedS), false)
	updated, removed := a.changes()
	if len(removed) != 0 || len(updated) != 1 || updated[0].Id != "b" || updated[0].DesiredState != shutdown {
		t.Fatalf("updated %v removed %v; want b (desired shutdown) only", updated, removed)
	}
}

func TestFurtherStatus(t *testing.T) {
	st := func(s api.TaskState, msg string) statusChange {
		return statusChange{nodeID: "n1", status: &api.TaskStatus{State: s, Message: msg}}
	}
	if got := furtherStatus(st(running, "x"), st(assignedS, "y")); got.status.Message != "x" {
		t.Errorf("a backward report replaced a further one")
	}
	if got := furtherStatus(st(running, "x"), st(running, "y")); got.status.Message != "y" {
		t.Errorf("a newer report at the same state did not win")
	}
	stored := task("t", "n1", running, running)
	for _, tc := range []struct {
		name string
		c    statusChange
		want bool
	}{
		{"forward", st(shutdown, ""), true},
		{"backward", st(assignedS, ""), false},
		{"same state, new message", st(running, "healthy"), true},
		{"no change", statusChange{nodeID: "n1", status: &api.TaskStatus{State: running}}, false},
		{"other node", statusChange{nodeID: "n2", status: &api.TaskStatus{State: shutdown}}, false},
	} {
		if got := acceptStatus(stored, tc.c); got != tc.want {
			t.Errorf("acceptStatus %s = %v, want %v", tc.name, got, tc.want)
		}
	}
}
