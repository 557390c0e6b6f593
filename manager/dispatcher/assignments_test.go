package dispatcher

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// nextAssignments receives one message and checks it.
func nextAssignments(t *testing.T, s api.DispatcherService_AssignmentsClient, typ api.AssignmentsMessage_Type, updated, removed []string) *api.AssignmentsMessage {
	t.Helper()
	msg, err := recv(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Type != typ || !slices.Equal(ids(msg.Updated), updated) || !slices.Equal(msg.Removed, removed) {
		t.Fatalf("got %v updated %v removed %v; want %v updated %v removed %v",
			msg.Type, ids(msg.Updated), msg.Removed, typ, updated, removed)
	}
	return msg
}

func TestAssignmentsStream(t *testing.T) {
	h := newHarness(t, workerNode("n1"), workerNode("n2"))
	h.create(
		task("t1", "n1", running, assignedS),
		task("pending", "n1", running, pending), // global, not accepted yet
		task("other", "n2", running, running),
		task("stopping", "n1", shutdown, running), // must reach the agent to stop
		task("stopped", "n1", shutdown, shutdown),
	)
	h.run()
	c, _, sess := h.openSession("n1", nil)
	ctx := h.ctxFor("n1")
	as, err := c.Assignments(ctx, &api.AssignmentsRequest{SessionId: sess.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	const (
		complete    = api.AssignmentsMessage_TYPE_COMPLETE
		incremental = api.AssignmentsMessage_TYPE_INCREMENTAL
	)
	nextAssignments(t, as, complete, []string{"stopping", "t1"}, nil)

	h.create(task("t2", "n1", running, assignedS))
	nextAssignments(t, as, incremental, []string{"t2"}, nil)

	// The agent's own status report is not echoed back: the next message
	// holds only the change that follows it, on another replica (were t1
	// echoed, it would come first or share that message, whatever the
	// timing).
	if _, err := c.UpdateTaskStatus(ctx, &api.UpdateTaskStatusRequest{SessionId: sess.SessionId,
		Updates: []*api.TaskStatusUpdate{{TaskId: "t1", Status: &api.TaskStatus{State: running}}}}); err != nil {
		t.Fatal(err)
	}
	h.change("t2", func(task *api.Task) { task.DesiredState = shutdown })
	nextAssignments(t, as, incremental, []string{"t2"}, nil)
	h.change("t1", func(task *api.Task) { task.DesiredState = shutdown })
	if msg := nextAssignments(t, as, incremental, []string{"t1"}, nil); msg.Updated[0].DesiredState != shutdown {
		t.Fatalf("t1 sent as %v, want desired shutdown", msg.Updated[0])
	}

	h.change("pending", func(task *api.Task) { task.Status.State = assignedS })
	nextAssignments(t, as, incremental, []string{"pending"}, nil)

	if err := h.st.Update(t.Context(), func(tx *store.Tx) error { return tx.Delete(tx.GetTask("t2")) }); err != nil {
		t.Fatal(err)
	}
	nextAssignments(t, as, incremental, nil, []string{"t2"})

	h.change("stopping", func(task *api.Task) { task.NodeId = "n2" })
	nextAssignments(t, as, incremental, nil, []string{"stopping"})

	// Several changes of one task within a window: one mention, as last
	// seen (the pure assignmentSet tests pin the coalescing down).
	h.create(task("a", "n1", running, assignedS), task("b", "n1", running, assignedS))
	h.change("a", func(task *api.Task) { task.SpecVersion = 2 })
	msg := nextAssignments(t, as, incremental, []string{"a", "b"}, nil)
	if msg.Updated[0].SpecVersion != 2 {
		// The change missed the window (a loaded machine): it comes next.
		msg = nextAssignments(t, as, incremental, []string{"a"}, nil)
		if msg.Updated[0].SpecVersion != 2 {
			t.Fatalf("a sent as %v, want spec version 2", msg.Updated[0])
		}
	}
}

// A store restore (a snapshot installed) replaces what the agent was told:
// it gets a COMPLETE message of the restored state.
func TestAssignmentsStartOverAfterRestore(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.create(task("t1", "n1", running, assignedS))
	h.run()
	c, _, sess := h.openSession("n1", nil)
	as, err := c.Assignments(h.ctxFor("n1"), &api.AssignmentsRequest{SessionId: sess.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	nextAssignments(t, as, api.AssignmentsMessage_TYPE_COMPLETE, []string{"t1"}, nil)

	snap := h.st.Save()
	snap.Tasks = []*api.Task{task("t2", "n1", running, assignedS), task("t3", "n1", shutdown, shutdown)}
	if err := h.st.Restore(snap, h.st.AppliedIndex()); err != nil {
		t.Fatal(err)
	}
	nextAssignments(t, as, api.AssignmentsMessage_TYPE_COMPLETE, []string{"t2"}, nil)

	// Changes after the restore stream as before.
	h.change("t2", func(task *api.Task) { task.DesiredState = shutdown })
	nextAssignments(t, as, api.AssignmentsMessage_TYPE_INCREMENTAL, []string{"t2"}, nil)
}

func TestUpdateTaskStatus(t *testing.T) {
	h := newHarness(t, workerNode("n1"), workerNode("n2"))
	h.create(task("t1", "n1", running, assignedS), task("theirs", "n2", running, assignedS))
	h.run()
	c, _, sess := h.openSession("n1", nil)
	ctx := h.ctxFor("n1")
	update := func(id string, state api.TaskState, msg string) {
		t.Helper()
		_, err := c.UpdateTaskStatus(ctx, &api.UpdateTaskStatusRequest{SessionId: sess.SessionId,
			Updates: []*api.TaskStatusUpdate{{TaskId: id, Status: &api.TaskStatus{State: state, Message: msg}}}})
		if err != nil {
			t.Fatalf("update %s to %v: %v", id, state, err)
		}
	}
	update("t1", running, "started")
	if got := h.task("t1").Status; got.State != running || got.Message != "started" {
		t.Fatalf("status after update returned: %v", got)
	}
	since := h.task("t1").RunningSince
	if since == nil {
		t.Fatal("RUNNING recorded without running_since: an update could not tell when its monitor period started")
	}
	update("t1", api.TaskState_TASK_STATE_PREPARING, "late report") // backward: ignored
	update("theirs", failed, "not mine")                            // another node's: ignored
	update("unknown", failed, "")                                   // unknown: ignored
	if got := h.task("t1").Status; got.State != running || got.Message != "started" {
		t.Errorf("backward report applied: %v", got)
	}
	if got := h.task("theirs").Status; got.State != assignedS {
		t.Errorf("report for another node's replica applied: %v", got)
	}
	update("t1", failed, "exit 1")
	if got := h.task("t1").Status; got.State != failed {
		t.Errorf("forward report not applied: %v", got)
	}
	if got := h.task("t1").RunningSince; !got.AsTime().Equal(since.AsTime()) {
		t.Errorf("running_since moved from %v to %v when the replica ended", since.AsTime(), got.AsTime())
	}

	_, err := c.UpdateTaskStatus(ctx, &api.UpdateTaskStatusRequest{SessionId: "stale",
		Updates: []*api.TaskStatusUpdate{{TaskId: "t1", Status: &api.TaskStatus{State: failed}}}})
	wantErr(t, "update with a stale session", err, codes.NotFound, reason.NotFound)
}

func TestStatusUpdatesFromManyNodesShareProposals(t *testing.T) {
	const nodes = 50
	h := newHarness(t)
	for i := range nodes {
		id := fmt.Sprintf("n%02d", i)
		h.create(workerNode(id), task("t-"+id, id, running, assignedS))
	}
	h.run()
	type agent struct {
		c   api.DispatcherServiceClient
		sid string
	}
	agents := make([]agent, nodes)
	for i := range nodes {
		c, _, sess := h.openSession(fmt.Sprintf("n%02d", i), nil)
		agents[i] = agent{c, sess.SessionId}
	}
	// A commit takes milliseconds in raft; this stand-in commits at once,
	// and then reports of a running replica (written at once, ADR 0028)
	// share proposals only by luck of scheduling. With a commit's latency,
	// the reports that come while one write is in flight share the next.
	h.prop.SetHook(func(func([]*api.StoreAction) error) error {
		time.Sleep(20 * time.Millisecond)
		return nil
	})
	before := h.prop.Proposals()
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	for i, a := range agents {
		wg.Go(func() {
			id := fmt.Sprintf("n%02d", i)
			_, err := a.c.UpdateTaskStatus(h.ctxFor(id), &api.UpdateTaskStatusRequest{SessionId: a.sid,
				Updates: []*api.TaskStatusUpdate{{TaskId: "t-" + id, Status: &api.TaskStatus{State: running}}}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range nodes {
		if st := h.task(fmt.Sprintf("t-n%02d", i)).Status.State; st != running {
			t.Fatalf("t-n%02d is %v", i, st)
		}
	}
	// Calls arriving while a write commits share the next one; allow a
	// few for goroutine start-up on a loaded machine.
	if got := h.prop.Proposals() - before; got > nodes/5 {
		t.Errorf("%d concurrent reports took %d proposals", nodes, got)
	}
}

// An idle stream sends a change at once; changes within the window after
// that message wait for the window's end and come together.
func TestAssignmentsPaced(t *testing.T) {
	const window = 2 * time.Second // "at once" cannot be mistaken for it
	h := newHarness(t, workerNode("n1"))
	h.srv.cfg.batchWindow = window
	h.run()
	c, _, sess := h.openSession("n1", nil)
	as, err := c.Assignments(h.ctxFor("n1"), &api.AssignmentsRequest{SessionId: sess.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	nextAssignments(t, as, api.AssignmentsMessage_TYPE_COMPLETE, nil, nil)
	start := time.Now()
	h.create(task("t1", "n1", running, assignedS))
	nextAssignments(t, as, api.AssignmentsMessage_TYPE_INCREMENTAL, []string{"t1"}, nil)
	if took := time.Since(start); took >= window {
		t.Errorf("a change on an idle stream came %v later, want at once (< %v)", took, window)
	}
	first := time.Now()
	h.create(task("t2", "n1", running, assignedS))
	h.create(task("t3", "n1", running, assignedS))
	nextAssignments(t, as, api.AssignmentsMessage_TYPE_INCREMENTAL, []string{"t2", "t3"}, nil)
	if gap := time.Since(first); gap < window/2 {
		t.Errorf("changes right after a message came %v later, want them held for the window (%v)", gap, window)
	}
}

// TestAssignmentsKeepNoCopyOfTheTasks: an open Assignments stream holds
// no copy of the node's tasks once their COMPLETE message is sent. A
// stream lasts as long as its session, so a copy held there is one of
// every task for every node in session: a manager restarted with 100 000
// tasks over 5 000 nodes held 230 MB of them (docs/bench/largestore.md).
func TestAssignmentsKeepNoCopyOfTheTasks(t *testing.T) {
	const n = 20000
	h := newHarness(t, workerNode("n1"))
	h.run()
	before := heapAlloc()
	objs := make([]store.Object, 0, n)
	for i := range n {
		tk := task(fmt.Sprintf("t%06d", i), "n1", running, running)
		tk.Spec = &api.ServiceSpec{Name: "svc", Bundle: &api.HookBundle{}, Env: []string{"A=1", "B=2"},
			Restart: &api.RestartPolicy{}, Placement: &api.Placement{Constraints: []string{"node.role==worker"}}}
		objs = append(objs, tk)
	}
	h.create(objs...)
	objs = nil
	stored := heapAlloc() - before

	c, _, sess := h.openSession("n1", nil)
	as, err := c.Assignments(h.ctxFor("n1"), &api.AssignmentsRequest{SessionId: sess.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		msg, err := recv(t, as)
		if err != nil {
			t.Fatal(err)
		}
		got += len(msg.Updated)
		if !msg.More {
			break
		}
	}
	if got != n {
		t.Fatalf("COMPLETE carried %d tasks, want %d", got, n)
	}
	held := heapAlloc() - before - stored
	t.Logf("the store holds %d tasks in %d kB; with the stream open the heap is %d kB more", n, stored>>10, held>>10)
	if held > stored/4 {
		t.Fatalf("with the stream open the heap holds %d kB more than the store's %d kB of tasks: a copy of them", held>>10, stored>>10)
	}
	runtime.KeepAlive(as)
}

// heapAlloc is the bytes of live objects, right after a collection (two:
// the second empties the pools' victim caches, gRPC's buffers among them).
func heapAlloc() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
