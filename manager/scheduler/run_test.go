package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// startScheduler runs a scheduler on st until stop is called (a leader's
// term) or the test ends.
func startScheduler(t *testing.T, st *store.Store, opts ...Option) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		New(st, append([]Option{WithBatchDelay(5 * time.Millisecond), WithLogger(slog.New(slog.DiscardHandler))}, opts...)...).Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func taskState(tx store.ReadTx, id string) (api.TaskState, string, string) {
	task := tx.GetTask(id)
	return task.GetStatus().GetState(), task.GetNodeId(), task.GetStatus().GetReason()
}

func TestRunAssignsAndExplainsPending(t *testing.T) {
	st := storetest.New(t)
	db := imageSpec("db")
	web := imageSpec("web")
	web.DependsOn = []string{"db"}
	web.Placement.Spread = []string{"node.labels.zone"}
	nowhere := imageSpec("nowhere")
	nowhere.Placement.Constraints = []string{"node.labels.zone==mars"}
	storetest.Create(t, st, readyNode("a1", "zone", "a"), readyNode("b1", "zone", "b"),
		service(db), service(web), service(nowhere))
	// Tasks present before the scheduler starts are found by its first pass.
	storetest.Create(t, st, pendingTasks(nowhere, 1)[0])
	// The scheduler loads tasks as shallow copies of the stored ones: the
	// stored object must come out of every decision unchanged.
	var stored, was *api.Task
	st.View(func(tx store.ReadTx) {
		tx.EachTask("", "", func(t *api.Task) bool {
			stored, was = t, proto.CloneOf(t)
			return false
		})
	})
	startScheduler(t, st)

	storetest.Create(t, st, tasksAsObjects(pendingTasks(web, 4))...)
	waitfor.Holds(t, 10*time.Second, "web waiting on db, nowhere without a node", viewed(st, func(tx store.ReadTx) bool {
		s, _, r := taskState(tx, "web.004")
		s2, _, r2 := taskState(tx, "nowhere.001")
		return s == api.TaskState_TASK_STATE_PENDING && r == ReasonWaitingOnDependency &&
			s2 == api.TaskState_TASK_STATE_PENDING && r2 == ReasonNoSuitableNode
	}, describeTasks))
	st.View(func(tx store.ReadTx) {
		msg := tx.GetTask("nowhere.001").GetStatus().GetMessage()
		if want := "no suitable node (2 nodes not satisfying the constraints)"; msg != want {
			t.Errorf("nowhere.001 message %q, want %q", msg, want)
		}
	})

	dbTask := pendingTasks(db, 1)[0]
	storetest.Create(t, st, dbTask)
	waitfor.Holds(t, 10*time.Second, "db assigned", viewed(st, func(tx store.ReadTx) bool {
		s, _, _ := taskState(tx, "db.001")
		return s == api.TaskState_TASK_STATE_ASSIGNED
	}, describeTasks))
	// The agent (simulated) reports db running: web follows, spread 2/2.
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		task := tx.GetTask("db.001")
		task.Status.State = api.TaskState_TASK_STATE_RUNNING
		return tx.Update(task)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Holds(t, 10*time.Second, "web assigned over both zones", viewed(st, func(tx store.ReadTx) bool {
		per := map[string]int{}
		for _, task := range tx.ListTasksByService("web") {
			if task.GetStatus().GetState() != api.TaskState_TASK_STATE_ASSIGNED {
				return false
			}
			per[task.GetNodeId()]++
		}
		return per["a1"] == 2 && per["b1"] == 2
	}, describeTasks))
	st.View(func(tx store.ReadTx) {
		task := tx.GetTask("web.001")
		if task.GetStatus().GetReason() != "" || task.GetStatus().GetTimestamp() == nil || task.GetStatus().GetMessage() == "" {
			t.Errorf("assigned status %v: want no reason, a timestamp and a message", task.GetStatus())
		}
	})

	// A node with the label arrives: the pending task is placed on it.
	storetest.Create(t, st, readyNode("m1", "zone", "mars"))
	waitfor.Holds(t, 10*time.Second, "nowhere.001 on m1", viewed(st, func(tx store.ReadTx) bool {
		s, n, _ := taskState(tx, "nowhere.001")
		return s == api.TaskState_TASK_STATE_ASSIGNED && n == "m1"
	}, describeTasks))
	if !proto.Equal(stored, was) {
		t.Errorf("the scheduler changed stored task %s in place:\nnow %v\nwas %v", was.GetId(), stored, was)
	}
}

// TestRunRetriesAfterVersionConflict: a writer that changes a task between
// the scheduler's read and its proposal makes the whole proposal fail; the
// scheduler reads the tasks again and places them all in a later batch.
func TestRunRetriesAfterVersionConflict(t *testing.T) {
	st, p := storetest.NewWithProposer(t)
	spec := imageSpec("svc")
	storetest.Create(t, st, readyNode("n1"), readyNode("n2"), service(spec))
	tasks := pendingTasks(spec, 3)
	storetest.Create(t, st, tasks[0], tasks[1], tasks[2])
	interfered := false
	p.SetHook(func(commit func([]*api.StoreAction) error) error {
		if interfered {
			return nil
		}
		interfered = true
		var task *api.Task
		st.View(func(tx store.ReadTx) { task = tx.GetTask("svc.002") })
		task.Status.Message = "touched by another writer"
		a := &api.StoreAction{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Task{Task: task}}
		if err := commit([]*api.StoreAction{a}); err != nil {
			t.Errorf("interfering write: %v", err)
		}
		return nil
	})
	before := p.Proposals()
	startScheduler(t, st)
	waitfor.Holds(t, 10*time.Second, "all three assigned", viewed(st, func(tx store.ReadTx) bool {
		for _, task := range tx.ListTasks() {
			if task.GetStatus().GetState() != api.TaskState_TASK_STATE_ASSIGNED {
				return false
			}
		}
		return true
	}, describeTasks))
	if calls := p.Proposals() - before; calls < 2 {
		t.Errorf("%d proposals; the refused batch was not retried", calls)
	}
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListTasksByNode("n1")); n < 1 || n > 2 {
			t.Errorf("n1 holds %d tasks; the retried batch did not see the first", n)
		}
	})
}

// TestRunChunksProposals: writes are split by the proposal limits.
func TestRunChunksProposals(t *testing.T) {
	st, p := storetest.NewWithProposer(t)
	spec := imageSpec("svc")
	storetest.Create(t, st, readyNode("n1"), service(spec))
	storetest.Create(t, st, tasksAsObjects(pendingTasks(spec, 25))...)
	before := p.Proposals()
	startScheduler(t, st, WithProposalLimits(10, 1<<20))
	waitfor.Holds(t, 10*time.Second, "25 assigned", viewed(st, func(tx store.ReadTx) bool {
		return len(tx.ListTasksByNode("n1")) == 25
	}, describeTasks))
	if n := p.Proposals() - before; n != 3 {
		t.Errorf("%d proposals for 25 tasks at 10 per proposal, want 3", n)
	}
}

// On an idle scheduler a pending task is decided at once, not after the
// batch delay (an hour here: it could not have been waited out); one that
// comes within the delay of that batch waits for it.
func TestRunDecidesAtOnceWhenIdle(t *testing.T) {
	st := storetest.New(t)
	web := imageSpec("web")
	storetest.Create(t, st, readyNode("a1"), service(web))
	startScheduler(t, st, WithBatchDelay(time.Hour))
	tasks := pendingTasks(web, 2)
	storetest.Create(t, st, tasks[0])
	waitfor.Holds(t, 10*time.Second, "web.001 assigned", viewed(st, func(tx store.ReadTx) bool {
		s, _, _ := taskState(tx, "web.001")
		return s == api.TaskState_TASK_STATE_ASSIGNED
	}, describeTasks))

	storetest.Create(t, st, tasks[1])
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		st.View(func(tx store.ReadTx) {
			if s, _, _ := taskState(tx, "web.002"); s != api.TaskState_TASK_STATE_PENDING {
				t.Fatalf("web.002 is %v right after a batch, want pending until the batch delay is over", s)
			}
		})
		time.Sleep(10 * time.Millisecond)
	}
}
