package orchestrator

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// TestDecisiveEvents: the orchestrator's watch lets through every event
// but a task update that changes only the task's meta or its status
// details, such as the scheduler recording why a replica stays pending.
func TestDecisiveEvents(t *testing.T) {
	pending := &api.Task{Id: "t1", ServiceId: "s1", Slot: 1, DesiredState: sRunning,
		Meta:   &api.Meta{Version: 3},
		Status: &api.TaskStatus{State: sPending, Timestamp: timestamppb.New(epoch)},
		Spec:   &api.ServiceSpec{Name: "web", Image: "web:1"}}
	changed := func(fn func(*api.Task)) *api.Task {
		c := proto.CloneOf(pending)
		fn(c)
		return c
	}
	update := func(t *api.Task) store.Event {
		return store.Event{Kind: store.EventUpdate, Object: t, Old: pending}
	}
	for _, c := range []struct {
		name string
		e    store.Event
		want bool
	}{
		{"pending reason", update(changed(func(t *api.Task) {
			t.Meta.Version = 4
			t.Status.Message, t.Status.Reason = "no suitable node", "no_suitable_node"
			t.Status.Timestamp = timestamppb.New(epoch.Add(1))
		})), false},
		{"same task", update(changed(func(*api.Task) {})), false},
		{"state", update(changed(func(t *api.Task) { t.Status.State = sRunning })), true},
		{"desired state", update(changed(func(t *api.Task) { t.DesiredState = sShutdown })), true},
		{"node", update(changed(func(t *api.Task) { t.NodeId = "n1" })), true},
		{"spec", update(changed(func(t *api.Task) { t.Spec.Image = "web:2" })), true},
		{"running since", update(changed(func(t *api.Task) { t.RunningSince = timestamppb.New(epoch) })), true},
		{"unstable", update(changed(func(t *api.Task) { t.Unstable = true })), true},
		{"create", store.Event{Kind: store.EventCreate, Object: pending}, true},
		{"delete", store.Event{Kind: store.EventDelete, Object: pending}, true},
		{"service", store.Event{Kind: store.EventUpdate, Object: &api.Service{Id: "s1"}, Old: &api.Service{Id: "s1"}}, true},
	} {
		if got := decisive(c.e); got != c.want {
			t.Errorf("%s: decisive = %v, want %v", c.name, got, c.want)
		}
	}
}
