package controlapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// watchStream is the server side of a WatchService stream: it records
// what was sent and when.
type watchStream struct {
	grpc.ServerStream
	ctx  context.Context
	msgs chan *api.WatchServiceMessage
	mu   sync.Mutex
	at   []time.Time
}

func (w *watchStream) Context() context.Context { return w.ctx }

func (w *watchStream) Send(m *api.WatchServiceMessage) error {
	w.mu.Lock()
	w.at = append(w.at, time.Now())
	w.mu.Unlock()
	select {
	case w.msgs <- m:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

// startWatch runs WatchService for name until the test ends. The channel
// is closed once the call returned, its error in *err.
func startWatch(t *testing.T, s *Server, name string) (w *watchStream, done <-chan struct{}, err *error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w = &watchStream{ctx: ctx, msgs: make(chan *api.WatchServiceMessage, 100)}
	ended := make(chan struct{})
	err = new(error)
	go func() {
		defer close(ended)
		*err = s.WatchService(&api.WatchServiceRequest{Service: name}, w)
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
	})
	return w, ended, err
}

// next waits for the next message until a deadline.
func (w *watchStream) next(t *testing.T) *api.WatchServiceMessage {
	t.Helper()
	select {
	case m := <-w.msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no WatchService message within 5s")
		return nil
	}
}

// task makes a task of svc (the store stamps its created_at).
func task(svc *api.Service, id string, slot uint64, node string, desired, state api.TaskState, version uint64) *api.Task {
	return &api.Task{
		Id: id, ServiceId: svc.Id, Slot: slot, NodeId: node, SpecVersion: version,
		DesiredState: desired,
		Status:       &api.TaskStatus{State: state},
		Spec:         svc.Spec,
	}
}

const (
	running  = api.TaskState_TASK_STATE_RUNNING
	shutdown = api.TaskState_TASK_STATE_SHUTDOWN
	pending  = api.TaskState_TASK_STATE_PENDING
	failedSt = api.TaskState_TASK_STATE_FAILED
	starting = api.TaskState_TASK_STATE_STARTING
)

func TestWatchServiceUnknownIsNotFound(t *testing.T) {
	s, _ := newServiceServer(t)
	w := &watchStream{ctx: context.Background(), msgs: make(chan *api.WatchServiceMessage, 1)}
	err := s.WatchService(&api.WatchServiceRequest{Service: "ghost"}, w)
	if reason.Of(err) != reason.NotFound {
		t.Fatalf("watch of an unknown service: %v, want not_found", err)
	}
}

// The first message describes each slot by its occupant: the newer of two
// live tasks (start-first), the latest failure of its spec while the
// occupant has not run, nothing for a slot being scaled away.
func TestWatchServiceDescribesSlots(t *testing.T) {
	s, st := newServiceServer(t)
	svc := create(t, s, imageSpec("web"))
	since := timestamppb.New(time.Unix(1_700_000_000, 0))
	old := task(svc, "t1", 1, "n1", running, running, 1)
	old.RunningSince = since
	old.Status.Message = "started"
	older := task(svc, "t2a", 2, "n1", running, running, 1)
	newer := task(svc, "t2b", 2, "n1", running, starting, 2)
	crashed := task(svc, "t3a", 3, "n1", shutdown, failedSt, 2)
	crashed.Status.Message, crashed.Status.Reason = "launch exited 1", "exit_code"
	retry := task(svc, "t3b", 3, "n1", running, pending, 2)
	retry.Status.Reason = "restart_delay"
	gone := task(svc, "t4", 4, "n1", shutdown, running, 1)
	oldCrash := task(svc, "t5a", 5, "n1", shutdown, failedSt, 1)
	oldCrash.Status.Message = "a spec since replaced failed"
	placing := task(svc, "t5b", 5, "n1", running, pending, 2)
	placing.Status.Reason = "no_suitable_node"
	// The store stamps created_at; one batch each, in creation order.
	for _, tk := range []*api.Task{old, gone, older, crashed, newer, retry, oldCrash, placing} {
		storetest.Create(t, st, tk)
	}

	w, _, _ := startWatch(t, s, "web")
	m := w.next(t)
	var stored *api.Service
	st.View(func(tx store.ReadTx) { stored = tx.GetService(svc.Id) })
	if !proto.Equal(m.Service, stored) || m.Removed {
		t.Errorf("service %v removed=%v, want the stored service", m.Service, m.Removed)
	}
	want := []*api.SlotProgress{
		{Slot: 1, NodeId: "n1", TaskId: "t1", State: running, DesiredState: running, SpecVersion: 1, RunningSince: since, Message: "started"},
		{Slot: 2, NodeId: "n1", TaskId: "t2b", State: starting, DesiredState: running, SpecVersion: 2},
		{Slot: 3, NodeId: "n1", TaskId: "t3b", State: pending, DesiredState: running, SpecVersion: 2, Message: "launch exited 1", Reason: "exit_code"},
		{Slot: 5, NodeId: "n1", TaskId: "t5b", State: pending, DesiredState: running, SpecVersion: 2, Reason: "no_suitable_node"},
	}
	if len(m.Slots) != len(want) {
		t.Fatalf("slots %v, want %v", m.Slots, want)
	}
	for i := range want {
		if !proto.Equal(m.Slots[i], want[i]) {
			t.Errorf("slot %d: %v, want %v", i+1, m.Slots[i], want[i])
		}
	}
}

// A global service's slots are its nodes.
func TestWatchServiceGlobalSlotsAreNodes(t *testing.T) {
	s, st := newServiceServer(t)
	storetest.Create(t, st, &api.Node{Id: "n2", Hostname: "w2"})
	svc := create(t, s, &api.ServiceSpec{Name: "agent", Image: "i", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL})
	storetest.Create(t, st, task(svc, "a", 0, "n2", running, running, 1), task(svc, "b", 0, "n1", running, pending, 1))
	w, _, _ := startWatch(t, s, svc.Id)
	m := w.next(t)
	if len(m.Slots) != 2 || m.Slots[0].NodeId != "n1" || m.Slots[0].TaskId != "b" || m.Slots[1].NodeId != "n2" || m.Slots[1].TaskId != "a" {
		t.Fatalf("global slots %v, want b on n1 and a on n2", m.Slots)
	}
}

// Every change to the service or its tasks is reported: the steps before
// a replica runs folded into one message an interval after the previous
// one, a replica running, the service changing and its removal at once;
// the last message holds the final state, and a removed service ends the
// stream with removed=true.
func TestWatchServiceFollowsChangesUntilRemoved(t *testing.T) {
	s, st := newServiceServer(t)
	// Long enough that a message sent at once cannot be one sent after
	// the interval, however slow the machine.
	s.watchInterval = 2 * time.Second
	svc := create(t, s, imageSpec("web"))
	other := create(t, s, imageSpec("db"))
	t1 := task(svc, "t1", 1, "n1", running, pending, 1)
	storetest.Create(t, st, t1)
	w, done, werr := startWatch(t, s, "web")
	if m := w.next(t); len(m.Slots) != 1 || m.Slots[0].State != pending {
		t.Fatalf("first message %v, want t1 pending", m)
	}
	setState := func(state api.TaskState) {
		t.Helper()
		err := st.Update(context.Background(), func(tx *store.Tx) error {
			cur := tx.GetTask("t1")
			cur.Status.State = state
			return tx.Update(cur)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	gap := func(i int) time.Duration {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.at[i].Sub(w.at[i-1])
	}

	for _, state := range []api.TaskState{api.TaskState_TASK_STATE_ASSIGNED, api.TaskState_TASK_STATE_PREPARING, starting} {
		setState(state)
	}
	if m := w.next(t); len(m.Slots) != 1 || m.Slots[0].State != starting {
		t.Fatalf("after assigned, preparing, starting: %v, want them folded into one message, t1 starting", m)
	}
	if g := gap(1); g < s.watchInterval {
		t.Errorf("the steps before running came %v after the first message, want the interval (%v)", g, s.watchInterval)
	}

	setState(running)
	if m := w.next(t); len(m.Slots) != 1 || m.Slots[0].State != running {
		t.Fatalf("after running: %v, want t1 running", m)
	}
	if g := gap(2); g >= s.watchInterval {
		t.Errorf("t1 running was sent %v after the message before, want at once (< %v)", g, s.watchInterval)
	}

	// Another service's tasks change nothing in the stream.
	storetest.Create(t, st, task(other, "o1", 1, "n1", running, running, 1))
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		cur := tx.GetService(svc.Id)
		cur.UpdateStatus = &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_PAUSED, Message: "web.1 failed"}
		return tx.Update(cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := w.next(t); m.Service.GetUpdateStatus().GetState() != api.UpdateState_UPDATE_STATE_PAUSED {
		t.Fatalf("after pausing: %v, want the paused service (nothing in between)", m)
	}
	if g := gap(3); g >= s.watchInterval {
		t.Errorf("the paused service was sent %v after the message before, want at once", g)
	}

	if _, err := s.RemoveService(context.Background(), &api.RemoveServiceRequest{Service: "web"}); err != nil {
		t.Fatal(err)
	}
	if m := w.next(t); !m.Removed {
		t.Fatalf("after removal: %v, want removed", m)
	}
	select {
	case <-done:
		if *werr != nil {
			t.Fatalf("stream ended with %v after the removal, want nil", *werr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open 5s after the removal")
	}
}

// The caller hanging up ends the stream.
func TestWatchServiceEndsWithTheCaller(t *testing.T) {
	s, _ := newServiceServer(t)
	create(t, s, imageSpec("web"))
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchStream{ctx: ctx, msgs: make(chan *api.WatchServiceMessage, 10)}
	done := make(chan error, 1)
	go func() { done <- s.WatchService(&api.WatchServiceRequest{Service: "web"}, w) }()
	w.next(t)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stream ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open 5s after the caller left")
	}
}

// After a rollback to the spec a replica runs, the replica is current
// (the orchestrator leaves it): the slot reports the service's
// spec_version. One whose spec would be replaced keeps its own.
func TestWatchServiceSameSpecIsCurrent(t *testing.T) {
	s, st := newServiceServer(t)
	svc := create(t, s, imageSpec("web"))
	oldSpec := proto.CloneOf(svc.Spec)
	changed := proto.CloneOf(svc.Spec)
	changed.Env = []string{"A=1"}
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		cur := tx.GetService(svc.Id)
		cur.SpecVersion, cur.Spec.Replicas = 3, 2 // a replica count is no reason to replace
		return tx.Update(cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	same := task(svc, "t1", 1, "n1", running, running, 1)
	same.Spec = oldSpec
	other := task(svc, "t2", 2, "n1", running, running, 2)
	other.Spec = changed
	storetest.Create(t, st, same, other)
	w, _, _ := startWatch(t, s, "web")
	m := w.next(t)
	if len(m.Slots) != 2 || m.Slots[0].SpecVersion != 3 || m.Slots[1].SpecVersion != 2 {
		t.Fatalf("slots %v, want slot 1 current (3) and slot 2 at its own 2", m.Slots)
	}
}

// A watched service leaves out what following a roll never reads and
// what makes it large: the previous spec and the bundle's files.
func TestWatchServiceIsSlim(t *testing.T) {
	s, _ := newServiceServer(t)
	spec := imageSpec("web")
	spec.Image, spec.Bundle = "", &api.HookBundle{Files: map[string][]byte{"launch": make([]byte, 512<<10)}}
	create(t, s, spec)
	changed := proto.CloneOf(spec)
	changed.Env = []string{"A=1"}
	if _, err := s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "web", Spec: changed}); err != nil {
		t.Fatal(err)
	}
	w, _, _ := startWatch(t, s, "web")
	m := w.next(t)
	if m.Service.GetPreviousSpec() != nil || len(m.Service.GetSpec().GetBundle().GetFiles()) != 0 || len(m.Service.GetSpec().GetEnv()) != 1 {
		t.Fatalf("watched service carries %d bytes: previous spec %v, %d bundle files; want neither, and the spec's env",
			proto.Size(m), m.Service.GetPreviousSpec() != nil, len(m.Service.GetSpec().GetBundle().GetFiles()))
	}
}

// TestCompactSlots: a service with more slots than a message lists gets
// its slots running the current spec counted, with the latest start;
// the others are listed up to the limit, the rest counted; a slot beyond
// the replica count is never counted as settled. Small services are
// listed whole.
func TestCompactSlots(t *testing.T) {
	svc := &api.Service{Id: "s", SpecVersion: 2, Spec: &api.ServiceSpec{Name: "big", Replicas: 3000}}
	var slots []*api.SlotProgress
	latest := timestamppb.New(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
	for i := uint64(1); i <= 3001; i++ {
		s := &api.SlotProgress{Slot: i, TaskId: fmt.Sprint("t", i), DesiredState: api.TaskState_TASK_STATE_RUNNING,
			State: api.TaskState_TASK_STATE_RUNNING, SpecVersion: 2, RunningSince: timestamppb.New(latest.AsTime().Add(-time.Duration(i) * time.Second))}
		switch {
		case i == 1:
			s.RunningSince = latest
		case i <= 1500: // settled
		case i <= 2000:
			s.SpecVersion = 1 // old spec: listed
		case i <= 3000:
			s.State = api.TaskState_TASK_STATE_PENDING
			s.RunningSince = nil
		}
		slots = append(slots, s) // 3001: beyond the replica count, running
	}
	msg := &api.WatchServiceMessage{Service: svc, Slots: slots}
	compactSlots(msg)
	if msg.Settled != 1500 || !proto.Equal(msg.SettledRunningSince, latest) {
		t.Errorf("settled %d since %v, want 1500 since %v", msg.Settled, msg.SettledRunningSince, latest)
	}
	if len(msg.Slots) != api.MaxListedSlots || msg.Slots[0].Slot != 1501 || msg.Unlisted != 501 {
		t.Errorf("listed %d slots from %d, %d unlisted; want %d from 1501, 501 unlisted",
			len(msg.Slots), msg.Slots[0].Slot, msg.Unlisted, api.MaxListedSlots)
	}
	if size := proto.Size(msg); size > 1<<20 {
		t.Errorf("compacted message is %d bytes", size)
	}

	small := &api.WatchServiceMessage{Service: svc, Slots: slots[:api.MaxListedSlots]}
	compactSlots(small)
	if len(small.Slots) != api.MaxListedSlots || small.Settled != 0 || small.Unlisted != 0 {
		t.Errorf("a service of %d slots was compacted: %d listed, %d settled", api.MaxListedSlots, len(small.Slots), small.Settled)
	}
}

// The defect: `service create --replicas 100000` failed ResourceExhausted
// once the first progress message listed 41 500 slots (over gRPC's 4 MiB
// limit). A service of 1 500 pending replicas gets a first message that
// lists 1 000 of them and counts the rest.
func TestWatchServiceLargeServiceIsCompacted(t *testing.T) {
	s, st := newServiceServer(t)
	spec := imageSpec("big")
	spec.Replicas = 1500
	svc := create(t, s, spec)
	var tasks []store.Object
	for i := uint64(1); i <= 1500; i++ {
		tasks = append(tasks, task(svc, fmt.Sprintf("t%04d", i), i, "", running, pending, svc.SpecVersion))
	}
	storetest.Create(t, st, tasks...)
	w, _, _ := startWatch(t, s, "big")
	m := w.next(t)
	if len(m.Slots) != api.MaxListedSlots || m.Slots[0].Slot != 1 || m.Unlisted != 500 || m.Settled != 0 {
		t.Fatalf("first message: %d slots listed from %d, %d unlisted, %d settled; want %d from 1, 500, 0",
			len(m.Slots), m.Slots[0].GetSlot(), m.Unlisted, m.Settled, api.MaxListedSlots)
	}
}
