package orchestrator

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func replicatedJob(id string, replicas, maxConcurrent uint64) *api.Service {
	return &api.Service{Id: id, JobStatus: &api.JobStatus{Iteration: 1}, Spec: &api.ServiceSpec{
		Name: id, Image: "img:1", Mode: api.ServiceMode_SERVICE_MODE_REPLICATED_JOB,
		Replicas: replicas, MaxConcurrent: maxConcurrent,
	}}
}

func globalJob(id string) *api.Service {
	return &api.Service{Id: id, JobStatus: &api.JobStatus{Iteration: 1}, Spec: &api.ServiceSpec{
		Name: id, Image: "img:1", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL_JOB,
	}}
}

// busyTasks counts the tasks of svcID that may be running: live, or
// stopping and not yet stopped.
func (h *harness) busyTasks(svcID string) int {
	n := 0
	for _, t := range h.tasks(svcID) {
		if busy(t) {
			n++
		}
	}
	return n
}

// capConcurrency fails the test as soon as any pass leaves more than max
// of svcID's replicas busy.
func (h *harness) capConcurrency(svcID string, limit int) {
	h.afterPass = func() {
		h.t.Helper()
		if n := h.busyTasks(svcID); n > limit {
			h.t.Fatalf("%d replicas of %s busy after a pass, max_concurrent is %d\n%s", n, svcID, limit, h.dump())
		}
	}
}

// nextIteration does what the Control API does on a change of a job's
// spec: a new iteration.
func (h *harness) nextIteration(id string, fn func(*api.ServiceSpec)) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		s := tx.GetService(id)
		fn(s.Spec)
		s.JobStatus = &api.JobStatus{Iteration: s.GetJobStatus().GetIteration() + 1, LastExecution: timestamppb.New(h.clock.Now())}
		return tx.Update(s)
	})
}

// finishedSlots are the slots of svcID whose occupant finished, in the
// iteration it, and how each ended.
func (h *harness) finishedSlots(svcID string, it uint64) map[uint64]api.TaskState {
	out := map[uint64]api.TaskState{}
	for _, t := range h.tasks(svcID) {
		if finished(t) && t.GetJobIteration() == it {
			out[t.Slot] = state(t)
		}
	}
	return out
}

// completeLive runs every live task of svcID on node and has it exit 0,
// one at a time, each followed by a step.
func (h *harness) completeLive(svcID, node string) int {
	h.t.Helper()
	ts := h.liveTasks(svcID)
	for _, t := range ts {
		h.report(t.Id, node, sRunning, 0)
		h.step()
		h.report(t.Id, node, sComplete, 0)
		h.step()
	}
	return len(ts)
}

// completeJob completes svcID's live replicas on node until n slots of
// iteration it have finished, failing the test when they do not.
func (h *harness) completeJob(svcID, node string, it uint64, n int) {
	h.t.Helper()
	for range n {
		if len(h.finishedSlots(svcID, it)) >= n {
			return
		}
		h.completeLive(svcID, node)
	}
	if got := len(h.finishedSlots(svcID, it)); got != n {
		h.t.Fatalf("%d slots of iteration %d finished, want %d\n%s", got, it, n, h.dump())
	}
}

func TestReplicatedJobNeverRunsMoreThanMaxConcurrent(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicatedJob("job", 5, 2))
	h.capConcurrency("job", 2)
	h.step()
	wantSlots(t, h, "job", 1, 2)
	for round := 0; len(h.finishedSlots("job", 1)) < 5; round++ {
		if round == 10 {
			t.Fatalf("job not complete after %d rounds\n%s", round, h.dump())
		}
		done := len(h.finishedSlots("job", 1))
		if live, want := len(h.liveTasks("job")), min(2, 5-done); live != want {
			t.Fatalf("%d live with %d of 5 done, want %d\n%s", live, done, want, h.dump())
		}
		// One replica at a time: its slot is filled again at once.
		task := h.liveTasks("job")[0]
		h.report(task.Id, "n1", sRunning, 0)
		h.step()
		h.report(task.Id, "n1", sComplete, 0)
		h.step()
	}
	fin := h.finishedSlots("job", 1)
	for slot := uint64(1); slot <= 5; slot++ {
		if fin[slot] != sComplete {
			t.Fatalf("slot %d: %v, want complete\n%s", slot, fin[slot], h.dump())
		}
	}
	if n := len(h.tasks("job")); n != 5 {
		t.Fatalf("%d tasks, want the 5 completions only\n%s", n, h.dump())
	}
	// Completed, the job stays so.
	h.clock.Advance(time.Hour)
	h.step()
	if n := len(h.liveTasks("job")); n != 0 {
		t.Fatalf("a completed job started %d replicas\n%s", n, h.dump())
	}
}

func TestReplicatedJobMaxConcurrentDefaultsToReplicas(t *testing.T) {
	h := newHarness(t)
	h.createService(replicatedJob("job", 3, 0))
	h.step()
	wantSlots(t, h, "job", 1, 2, 3)
}

func TestReplicatedJobRetriesAFailureByDefault(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicatedJob("job", 2, 1))
	h.capConcurrency("job", 1)
	h.step()
	first := wantSlots(t, h, "job", 1)[0]
	h.report(first.Id, "n1", sFailed, 1)
	h.step()
	// Default policy (any, on-failure for a job): slot 1 again, after the
	// restart delay, and slot 2 still waits for room.
	retry := wantSlots(t, h, "job", 1)[0]
	if retry.Id == first.Id || retry.NotBefore == nil || retry.JobIteration != 1 {
		t.Fatalf("want a restart attempt of slot 1 in iteration 1\n%s", h.dump())
	}
	if n := h.completeLive("job", "n1"); n != 1 {
		t.Fatalf("completed %d, want 1", n)
	}
	wantSlots(t, h, "job", 2)
	h.completeLive("job", "n1")
	if fin := h.finishedSlots("job", 1); len(fin) != 2 || fin[1] != sComplete || fin[2] != sComplete {
		t.Fatalf("finished slots %v, want 1 and 2 complete\n%s", fin, h.dump())
	}
}

func TestReplicatedJobWithRestartNoneEndsFailed(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	svc := replicatedJob("job", 2, 1)
	svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_NONE, time.Second, 0, 0)
	h.createService(svc)
	h.capConcurrency("job", 1)
	h.step()
	first := wantSlots(t, h, "job", 1)[0]
	h.report(first.Id, "n1", sFailed, 1)
	h.step()
	// The slot ended failed for good; the job goes on with slot 2.
	wantSlots(t, h, "job", 2)
	h.completeLive("job", "n1")
	fin := h.finishedSlots("job", 1)
	if fin[1] != sFailed || fin[2] != sComplete {
		t.Fatalf("finished slots %v, want 1 failed and 2 complete\n%s", fin, h.dump())
	}
	h.clock.Advance(time.Hour)
	h.step()
	if n := len(h.liveTasks("job")); n != 0 {
		t.Fatalf("a failed slot of restart none started again\n%s", h.dump())
	}
}

func TestReplicatedJobRestartAnyDoesNotRerunACompletion(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	svc := replicatedJob("job", 1, 0)
	svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_ANY, 0, 0, 0)
	h.createService(svc)
	h.step()
	h.completeLive("job", "n1")
	if n := len(h.liveTasks("job")); n != 0 {
		t.Fatalf("completion restarted under condition any\n%s", h.dump())
	}
}

func TestReplicatedJobNewIterationRunsAgain(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicatedJob("job", 3, 2))
	h.capConcurrency("job", 2)
	h.step()
	h.completeJob("job", "n1", 1, 3)
	// --force: a new iteration, every slot once more.
	h.nextIteration("job", func(s *api.ServiceSpec) { s.ForceUpdate++ })
	h.step()
	ts := wantSlots(t, h, "job", 1, 2)
	for _, task := range ts {
		if task.JobIteration != 2 {
			t.Fatalf("new task of iteration %d, want 2\n%s", task.JobIteration, h.dump())
		}
	}
	// The last run's completions stay as history, out of their slots.
	for _, task := range h.tasks("job") {
		if task.JobIteration == 1 && (task.DesiredState != sShutdown || state(task) != sComplete) {
			t.Fatalf("iteration 1 task %s desired %s state %s, want history (shutdown, complete)", task.Id, task.DesiredState, state(task))
		}
	}
	h.completeJob("job", "n1", 2, 3)
	// Scaling is a spec change, so a new iteration too.
	h.nextIteration("job", func(s *api.ServiceSpec) { s.Replicas = 1 })
	h.step()
	wantSlots(t, h, "job", 1)
}

func TestReplicatedJobNewIterationWaitsForTheLastToStop(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicatedJob("job", 2, 2))
	h.capConcurrency("job", 2)
	h.step()
	old := h.runningOn("job", "n1")
	h.nextIteration("job", func(s *api.ServiceSpec) { s.ForceUpdate++ })
	h.step()
	// Both old replicas are stopping: no room for the new iteration yet.
	if n := len(h.liveTasks("job")); n != 0 {
		t.Fatalf("%d new replicas while the old ones still stop\n%s", n, h.dump())
	}
	h.report(old[0].Id, "", sShutdown, 0)
	h.step()
	if ts := h.liveTasks("job"); len(ts) != 1 || ts[0].JobIteration != 2 {
		t.Fatalf("want one replica of iteration 2 once one old one stopped\n%s", h.dump())
	}
}

func TestReplicatedJobOnDrainedNodeRunsElsewhereUnlessComplete(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicatedJob("job", 2, 1))
	h.capConcurrency("job", 1)
	h.step()
	h.completeLive("job", "n1")
	ts := []*api.Task{h.tasks("job")[0], h.runningOn("job", "n1")[0]}
	h.startDrain("n1", 0, false, false)
	h.step()
	// Stop first: the stopping replica holds its room until it has
	// stopped, so no second copy of slot 2 runs beside it here.
	if got := h.task(ts[1].Id); got.DesiredState != sShutdown || len(h.liveTasks("job")) != 0 {
		t.Fatalf("running replica on the drained node not stopped first\n%s", h.dump())
	}
	h.report(ts[1].Id, "", sShutdown, 0)
	h.step()
	again := wantSlots(t, h, "job", 2)[0]
	if again.Id == ts[1].Id {
		t.Fatalf("slot 2 not run again")
	}
	if got := h.task(ts[0].Id); !finished(got) {
		t.Fatalf("completion on the drained node %v, want it kept finished", got)
	}
}

func TestReplicatedJobOnLostNodeRunsAgainAtOnce(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicatedJob("job", 1, 1))
	h.capConcurrency("job", 1)
	h.step()
	first := h.runningOn("job", "n1")[0]
	h.lose("n1", api.NodeStatusState_NODE_STATUS_STATE_DOWN)
	h.step()
	ts := wantSlots(t, h, "job", 1)
	if ts[0].Id == first.Id || state(h.task(first.Id)) != sOrphaned {
		t.Fatalf("want the lost replica orphaned and its slot run again\n%s", h.dump())
	}
}

func TestGlobalJobOncePerNodeIncludingLaterNodes(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(globalJob("gj"))
	h.step()
	ts := wantNodes(t, h, "gj", "n1", "n2")
	for _, task := range ts {
		if task.JobIteration != 1 {
			t.Fatalf("task %v, want iteration 1", task)
		}
		h.report(task.Id, "", sRunning, 0)
		h.report(task.Id, "", sComplete, 0)
	}
	h.step()
	if n := len(h.liveTasks("gj")); n != 0 {
		t.Fatalf("a completed global job started %d replicas\n%s", n, h.dump())
	}
	h.setNode(readyNode("n3", nil))
	h.step()
	wantNodes(t, h, "gj", "n3")
	// A node drained after its completion keeps it, and does not run the
	// job again when it is back.
	h.changeNode("n1", func(n *api.Node) { n.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN })
	h.step()
	h.changeNode("n1", func(n *api.Node) { n.Availability = api.NodeAvailability_NODE_AVAILABILITY_ACTIVE })
	h.step()
	wantNodes(t, h, "gj", "n3")
	if got := h.task(ts[0].Id); !finished(got) {
		t.Fatalf("n1's completion %v, want kept finished", got)
	}
	// A new iteration runs on every node again.
	h.nextIteration("gj", func(s *api.ServiceSpec) { s.ForceUpdate++ })
	h.step()
	ts = wantNodes(t, h, "gj", "n1", "n2", "n3")
	if !slices.ContainsFunc(ts, func(t *api.Task) bool { return t.JobIteration == 2 }) {
		t.Fatalf("no task of iteration 2\n%s", h.dump())
	}
}

func TestCompletedJobIsNotRerunByANewLeader(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicatedJob("job", 3, 2))
	h.createService(globalJob("gj"))
	h.step()
	h.completeJob("job", "n1", 1, 3)
	h.completeLive("gj", "")
	before := h.tasks("job")
	// A new leader: a new orchestrator on the same store, run as Run
	// runs it, from a full reconciliation.
	h.o = New(h.st, WithClock(h.clock.Now))
	h.clock.Advance(time.Hour)
	proposals := h.p.Proposals()
	h.step()
	if n := h.p.Proposals() - proposals; n != 0 {
		t.Fatalf("the new orchestrator wrote %d batches over completed jobs\n%s", n, h.dump())
	}
	if after := h.tasks("job"); len(after) != len(before) || len(h.liveTasks("job")) != 0 || len(h.liveTasks("gj")) != 0 {
		t.Fatalf("completed jobs changed under a new orchestrator\n%s", h.dump())
	}
}

func TestJobsAreNotRolledOrRebalanced(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	svc := replicatedJob("job", 2, 2)
	// As a spec from before jobs refused policies would have it.
	svc.UpdateStatus = &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_UPDATING}
	svc.Rebalance = &api.RebalanceStatus{State: api.RebalanceState_REBALANCE_STATE_REQUESTED}
	h.createService(svc)
	h.step()
	running := h.runningOn("job", "n1")
	h.step()
	for _, task := range h.liveTasks("job") {
		if !slices.ContainsFunc(running, func(r *api.Task) bool { return r.Id == task.Id }) || task.Replaces != "" {
			t.Fatalf("a job's running replica was replaced\n%s", h.dump())
		}
	}
}
