package events

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func changesOf(e *api.Event) string {
	s := ""
	for _, c := range e.GetChanges() {
		s += fmt.Sprintf("%s %s→%s;", c.GetField(), c.GetFrom(), c.GetTo())
	}
	return s
}

func TestFromStoreTaskStateChange(t *testing.T) {
	old := &api.Task{Id: "t1", ServiceId: "s1", ServiceName: "web", Slot: 2, DesiredState: api.TaskState_TASK_STATE_RUNNING,
		Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_PENDING, Reason: "no_suitable_node"}}
	now := proto.Clone(old).(*api.Task)
	now.NodeId = "n1"
	now.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_FAILED, Reason: "exit_code", Message: "exited 3"}
	before := proto.Clone(now)
	ev := FromStore(store.Event{Kind: store.EventUpdate, Object: now, Old: old, Index: 7}, t0)
	want := &api.Event{Index: 7, Type: TypeTask, Action: ActionState, Id: "t1", Name: "web.2", ServiceId: "s1", ServiceName: "web",
		NodeId: "n1", From: "pending", To: "failed", Reason: "exit_code", Message: "exited 3",
		Changes: []*api.EventChange{{Field: "node", From: "", To: "n1"}}}
	ev.Time = nil
	if !proto.Equal(ev, want) {
		t.Fatalf("task state change as\n%v\nwant\n%v", ev, want)
	}
	if !proto.Equal(now, before) {
		t.Fatal("FromStore changed the stored object it read")
	}
}

func TestFromStoreServiceNodeAndSkipped(t *testing.T) {
	svc := func(replicas uint64) *api.Service {
		return &api.Service{Id: "s1", Spec: &api.ServiceSpec{Name: "web", Replicas: replicas, Image: "busybox"}, SpecVersion: 1}
	}
	ev := FromStore(store.Event{Kind: store.EventUpdate, Object: svc(5), Old: svc(3)}, t0)
	if ev.GetAction() != ActionUpdate || ev.GetName() != "web" || changesOf(ev) != "replicas 3→5;" {
		t.Fatalf("scale as %s %s %q, want update web replicas 3→5", ev.GetAction(), ev.GetName(), changesOf(ev))
	}
	if ev := FromStore(store.Event{Kind: store.EventDelete, Object: svc(5)}, t0); ev.GetAction() != ActionRemove {
		t.Fatalf("delete as action %q, want remove", ev.GetAction())
	}
	node := func(s api.NodeStatusState, a api.NodeAvailability) *api.Node {
		return &api.Node{Id: "n1", Hostname: "w1", Availability: a, Status: &api.NodeStatus{State: s, Message: "heartbeat"}}
	}
	ev = FromStore(store.Event{Kind: store.EventUpdate, Object: node(api.NodeStatusState_NODE_STATUS_STATE_DOWN, api.NodeAvailability_NODE_AVAILABILITY_DRAIN),
		Old: node(api.NodeStatusState_NODE_STATUS_STATE_READY, api.NodeAvailability_NODE_AVAILABILITY_ACTIVE)}, t0)
	if ev.GetAction() != ActionState || ev.GetFrom() != "ready" || ev.GetTo() != "down" || changesOf(ev) != "availability active→drain;" {
		t.Fatalf("node change as %s %s→%s %q", ev.GetAction(), ev.GetFrom(), ev.GetTo(), changesOf(ev))
	}
	if ev := FromStore(store.Event{Kind: store.EventCreate, Object: &api.JoinToken{Id: "j"}}, t0); ev != nil {
		t.Fatalf("a join token is reported: %v", ev)
	}
	if ev := FromStore(store.Event{Kind: store.EventReset, Index: 9}, t0); ev.GetType() != TypeStore || ev.GetAction() != ActionReset || ev.GetIndex() != 9 {
		t.Fatalf("reset as %v", ev)
	}
}

// TestRecordFromStore: what a real store applies reaches the log in apply
// order with its raft index; entries up to replayedThrough do not.
func TestRecordFromStore(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st, &api.Node{Id: "n0", Hostname: "replayed"}) // index 1: as if replayed at open
	l := NewLog(100, time.Hour, nil)
	r := Record(st, l, 1)
	defer r.Stop()
	svc := &api.Service{Id: "s1", Spec: &api.ServiceSpec{Name: "web", Replicas: 1}}
	storetest.Create(t, st, svc)
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		s := tx.GetService("s1")
		s.Spec.Replicas = 2
		return tx.Update(s)
	})
	if err != nil {
		t.Fatalf("scale: %v", err)
	}
	if err := st.Update(context.Background(), func(tx *store.Tx) error { return tx.Delete(tx.GetService("s1")) }); err != nil {
		t.Fatalf("remove: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var evs []*api.Event
	for len(evs) < 3 {
		got, _, wait, _ := l.After(uint64(len(evs)), 10)
		evs = append(evs, got...)
		if len(got) == 0 {
			select {
			case <-wait:
			case <-time.After(time.Until(deadline)):
				t.Fatalf("log holds %d events, want 3", len(evs))
			}
		}
	}
	var seq []string
	for _, e := range evs {
		seq = append(seq, fmt.Sprintf("%s %s %s @%d %s", e.GetType(), e.GetAction(), e.GetName(), e.GetIndex(), changesOf(e)))
	}
	want := []string{"service create web @2 ", "service update web @3 replicas 1→2;", "service remove web @4 "}
	if fmt.Sprint(seq) != fmt.Sprint(want) {
		t.Fatalf("recorded\n%q\nwant\n%q", seq, want)
	}
}

// BenchmarkTakeTaskUpdate is what the recorder adds to the store's
// broadcaster for each task write: convert a state change and append it.
func BenchmarkTakeTaskUpdate(b *testing.B) {
	old := &api.Task{Id: "t1", ServiceId: "s1", ServiceName: "web", Slot: 2, NodeId: "n1",
		Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_ASSIGNED}}
	now := &api.Task{Id: "t1", ServiceId: "s1", ServiceName: "web", Slot: 2, NodeId: "n1",
		Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING, Message: "started"}}
	l := NewLog(DefaultCapacity, DefaultMaxAge, nil)
	b.ReportAllocs()
	for b.Loop() {
		l.Append(FromStore(store.Event{Kind: store.EventUpdate, Object: now, Old: old, Index: 1}, l.Now()))
	}
}

// TestClusterEventNamesTheCARotationPhase: a CA rotation's phase changes
// are in the cluster's events; its keys never are.
func TestClusterEventNamesTheCARotationPhase(t *testing.T) {
	old := &api.Cluster{Id: "c1", CaKeyPem: []byte("old key")}
	now := &api.Cluster{Id: "c1", CaKeyPem: []byte("old key"),
		CaRotation: &api.CARotation{Phase: api.CARotation_PHASE_TRUST, NewCaKeyPem: []byte("new key")}}
	ev := FromStore(store.Event{Kind: store.EventUpdate, Object: now, Old: old}, t0)
	if got := changesOf(ev); got != "ca_rotation none→trust;" {
		t.Fatalf("rotation start as %q, want ca_rotation none→trust", got)
	}
	if s := fmt.Sprint(ev); strings.Contains(s, "key") {
		t.Fatalf("the event carries a key: %s", s)
	}
}
