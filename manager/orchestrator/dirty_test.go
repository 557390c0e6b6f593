package orchestrator

import (
	"fmt"
	"maps"
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
		{"pending reason, the spec shared", update(func() *api.Task {
			c := pending.Shallow()
			c.Status = &api.TaskStatus{State: sPending, Reason: "no_suitable_node"}
			return c
		}()), false},
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

// TestIntakeTurnsABurstIntoOneTake: however many events the store
// broadcasts, the loop finds one kick waiting and takes every service
// they concern at once; the filter lets none of them through.
func TestIntakeTurnsABurstIntoOneTake(t *testing.T) {
	in := newIntake(true)
	for i := range 10_000 {
		e := store.Event{Kind: store.EventCreate, Object: &api.Task{Id: fmt.Sprint(i), ServiceId: fmt.Sprint("s", i%3)}}
		if in.filter(e) {
			t.Fatal("the intake let an event through to the watch's channel")
		}
	}
	select {
	case <-in.kick:
	default:
		t.Fatal("no kick after 10 000 events")
	}
	select {
	case <-in.kick:
		t.Fatal("a second kick for one burst")
	default:
	}
	d := noMarks()
	in.take(d)
	if want := map[string]bool{"s0": true, "s1": true, "s2": true}; !maps.Equal(d.services, want) {
		t.Fatalf("took services %v, want %v", d.services, want)
	}
	d = noMarks()
	in.take(d)
	if len(d.services) != 0 {
		t.Fatalf("a second take found %v", d.services)
	}
}
