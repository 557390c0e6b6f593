package orchestrator

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func workerNode(id string) *api.Node {
	n := readyNode(id, nil)
	n.Description = &api.NodeDescription{Runtimes: []string{"containerd"}}
	return n
}

// piled makes a service of replicas that run on the given nodes, in slot
// order, with three worker nodes n1..n3 ready.
func piled(t *testing.T, h *harness, policy *api.UpdatePolicy, on ...string) {
	t.Helper()
	for _, id := range []string{"n1", "n2", "n3"} {
		h.setNode(workerNode(id))
	}
	svc := replicated("web", uint64(len(on)))
	svc.Spec.Update = policy
	h.createService(svc)
	h.step()
	for i, task := range h.liveTasks("web") {
		h.report(task.Id, on[i], sRunning, 0)
	}
	h.step()
}

func (h *harness) requestRebalance(id string) {
	h.t.Helper()
	h.update(func(tx *store.Tx) error {
		s := tx.GetService(id)
		s.Rebalance = &api.RebalanceStatus{State: api.RebalanceState_REBALANCE_STATE_REQUESTED,
			RequestedAt: timestamppb.New(h.clock.Now())}
		return tx.Update(s)
	})
}

// moves are the live tasks a rebalance started.
func (h *harness) moves(id string) []*api.Task {
	return slices.DeleteFunc(h.liveTasks(id), func(t *api.Task) bool { return !t.Rebalance })
}

// runningPerNode counts svc's live, running replicas per node.
func (h *harness) runningPerNode(id string) map[string]int {
	out := map[string]int{}
	for _, t := range h.liveTasks(id) {
		if t.GetStatus().GetState() == sRunning {
			out[t.NodeId]++
		}
	}
	return out
}

func startFirst() *api.UpdatePolicy {
	return &api.UpdatePolicy{Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST, Monitor: durationpb.New(time.Second)}
}

func TestRebalanceStartFirstMovesTheFewestAndNeverDropsBelowReplicas(t *testing.T) {
	h := newHarness(t)
	piled(t, h, startFirst(), "n1", "n1", "n2")
	h.requestRebalance("web")
	h.step()
	rb := h.service("web").GetRebalance()
	if rb.GetState() != api.RebalanceState_REBALANCE_STATE_MOVING || rb.GetTotal() != 1 || rb.GetStarted() != 1 {
		t.Fatalf("rebalance = %v, want moving 1 of 1 begun", rb)
	}
	mv := h.moves("web")
	if len(mv) != 1 || mv[0].Slot != 2 || mv[0].NodeId != "" {
		t.Fatalf("moves = %v, want one unplaced successor of slot 2 (the higher slot on n1)\n%s", mv, h.dump())
	}
	if got := h.runningPerNode("web"); got["n1"] != 2 || got["n2"] != 1 {
		t.Fatalf("running = %v: start-first must keep the replica until its successor runs", got)
	}
	h.report(mv[0].Id, "n3", sRunning, 0)
	h.step()
	if got := h.runningPerNode("web"); got["n1"] != 1 || got["n2"] != 1 || got["n3"] != 1 {
		t.Fatalf("running = %v, want 1/1/1\n%s", got, h.dump())
	}
	if rb := h.service("web").GetRebalance(); rb.GetState() != api.RebalanceState_REBALANCE_STATE_MOVING || rb.GetMoved() != 1 {
		t.Fatalf("rebalance = %v, want moving until the successor is stable, 1 moved", rb)
	}
	h.clock.Advance(time.Second)
	h.step()
	rb = h.service("web").GetRebalance()
	if rb.GetState() != api.RebalanceState_REBALANCE_STATE_COMPLETED || rb.GetMoved() != 1 || rb.GetCompletedAt() == nil {
		t.Fatalf("rebalance = %v, want completed, 1 moved", rb)
	}
}

func TestRebalanceStopFirstStopsTheReplicaFirst(t *testing.T) {
	h := newHarness(t)
	piled(t, h, &api.UpdatePolicy{}, "n1", "n1", "n1")
	h.requestRebalance("web")
	h.step()
	if rb := h.service("web").GetRebalance(); rb.GetTotal() != 2 || rb.GetStarted() != 2 {
		t.Fatalf("rebalance = %v, want 2 moves begun (parallelism 0: all at once)", rb)
	}
	if got := h.runningPerNode("web"); got["n1"] != 1 {
		t.Fatalf("running = %v: stop-first stops the moved replicas first", got)
	}
	if mv := h.moves("web"); len(mv) != 2 || mv[0].Slot != 2 || mv[1].Slot != 3 {
		t.Fatalf("moves = %v, want successors of slots 2 and 3", mv)
	}
}

func TestRebalanceAlreadyEvenCompletesAtOnce(t *testing.T) {
	h := newHarness(t)
	piled(t, h, nil, "n1", "n2", "n3", "n1")
	h.requestRebalance("web")
	h.step()
	rb := h.service("web").GetRebalance()
	if rb.GetState() != api.RebalanceState_REBALANCE_STATE_COMPLETED || rb.GetTotal() != 0 {
		t.Fatalf("rebalance = %v, want completed with nothing to move", rb)
	}
	if len(h.moves("web")) != 0 {
		t.Fatalf("a balanced service had replicas moved:\n%s", h.dump())
	}
}

func TestRebalanceGivesUpAMovePlacedBackOnItsNode(t *testing.T) {
	h := newHarness(t)
	piled(t, h, startFirst(), "n1", "n1", "n2")
	h.requestRebalance("web")
	h.step()
	mv := h.moves("web")[0]
	h.update(func(tx *store.Tx) error { // the scheduler found only n1
		task := tx.GetTask(mv.Id)
		task.NodeId = "n1"
		task.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_ASSIGNED}
		return tx.Update(task)
	})
	h.step()
	rb := h.service("web").GetRebalance()
	if rb.GetState() != api.RebalanceState_REBALANCE_STATE_COMPLETED || rb.GetMoved() != 0 {
		t.Fatalf("rebalance = %v, want completed with the move given up", rb)
	}
	if got := h.runningPerNode("web"); got["n1"] != 2 || got["n2"] != 1 || len(h.liveTasks("web")) != 3 {
		t.Fatalf("running = %v, want the replicas as they were\n%s", got, h.dump())
	}
}

func TestRebalanceGivesUpAMoveNoNodeTakes(t *testing.T) {
	h := newHarness(t)
	piled(t, h, startFirst(), "n1", "n1", "n2")
	h.requestRebalance("web")
	h.step()
	mv := h.moves("web")[0]
	h.update(func(tx *store.Tx) error {
		task := tx.GetTask(mv.Id)
		task.Status = &api.TaskStatus{State: sPending, Reason: "no_suitable_node", Message: "no node has room"}
		return tx.Update(task)
	})
	h.step()
	if rb := h.service("web").GetRebalance(); rb.GetState() != api.RebalanceState_REBALANCE_STATE_COMPLETED {
		t.Fatalf("rebalance = %v, want completed with the move given up", rb)
	}
	if len(h.liveTasks("web")) != 3 || len(h.moves("web")) != 0 {
		t.Fatalf("want the three replicas as they were:\n%s", h.dump())
	}
}

func TestRebalanceParallelismAndDelay(t *testing.T) {
	h := newHarness(t)
	pol := startFirst()
	pol.Parallelism, pol.Delay = 1, durationpb.New(10*time.Second)
	piled(t, h, pol, "n1", "n1", "n1")
	h.requestRebalance("web")
	h.step()
	if mv := h.moves("web"); len(mv) != 1 {
		t.Fatalf("%d moves begun, want 1 (parallelism 1)", len(mv))
	}
	first := h.moves("web")[0]
	h.report(first.Id, "n2", sRunning, 0)
	h.step()
	h.report(h.task(first.Replaces).Id, "", sShutdown, 0) // the replica it took over from stopped, as its agent says
	h.clock.Advance(time.Second)                          // stable now: the delay runs from here
	h.step()
	if mv := h.moves("web"); len(mv) != 1 {
		t.Fatalf("%d moves, want the second to wait for the delay", len(mv))
	}
	h.clock.Advance(10 * time.Second)
	h.step()
	var second *api.Task
	for _, m := range h.moves("web") {
		if m.NodeId == "" {
			second = m
		}
	}
	if second == nil {
		t.Fatalf("no second move after the delay:\n%s", h.dump())
	}
	h.report(second.Id, "n3", sRunning, 0)
	h.clock.Advance(time.Second)
	h.step()
	rb := h.service("web").GetRebalance()
	if rb.GetState() != api.RebalanceState_REBALANCE_STATE_COMPLETED || rb.GetMoved() != 2 {
		t.Fatalf("rebalance = %v, want completed, 2 moved", rb)
	}
	if got := h.runningPerNode("web"); got["n1"] != 1 || got["n2"] != 1 || got["n3"] != 1 {
		t.Fatalf("running = %v, want 1/1/1", got)
	}
}

func TestRebalanceWaitsForAnUpdate(t *testing.T) {
	h := newHarness(t)
	piled(t, h, startFirst(), "n1", "n1", "n2")
	h.changeService("web", func(s *api.ServiceSpec) { s.Image = "img:2" })
	h.requestRebalance("web")
	h.step()
	if rb := h.service("web").GetRebalance(); rb.GetState() != api.RebalanceState_REBALANCE_STATE_REQUESTED {
		t.Fatalf("rebalance = %v, want it to wait while the update rolls", rb)
	}
	if len(h.moves("web")) != 0 {
		t.Fatalf("moves began during an update:\n%s", h.dump())
	}
}

func TestRebalanceLeavesNodesThatTakeNoReplicas(t *testing.T) {
	h := newHarness(t)
	piled(t, h, nil, "n1", "n1", "n2", "n2")
	h.changeNode("n3", func(n *api.Node) { n.Availability = api.NodeAvailability_NODE_AVAILABILITY_PAUSE })
	h.requestRebalance("web")
	h.step()
	if rb := h.service("web").GetRebalance(); rb.GetState() != api.RebalanceState_REBALANCE_STATE_COMPLETED || rb.GetTotal() != 0 {
		t.Fatalf("rebalance = %v, want nothing to move onto a paused node", rb)
	}
}

func TestRebalanceOnJoinAsksWhenANodeComesBack(t *testing.T) {
	h := newHarness(t)
	h.update(func(tx *store.Tx) error { return tx.Create(&api.Cluster{Id: "c", RebalanceOnJoin: true}) })
	piled(t, h, startFirst(), "n1", "n1", "n2")
	h.run()
	// The watch begins some time after Run: the node goes down and comes
	// back until a return is seen.
	h.waitFor("a rebalance to begin", func() bool {
		h.changeNode("n3", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN })
		h.changeNode("n3", func(n *api.Node) { n.Status.State = api.NodeStatusState_NODE_STATUS_STATE_READY })
		return len(h.moves("web")) == 1
	})
}

func TestRebalanceOnJoinOffAsksNothing(t *testing.T) {
	h := newHarness(t)
	h.update(func(tx *store.Tx) error { return tx.Create(&api.Cluster{Id: "c"}) })
	piled(t, h, startFirst(), "n1", "n1", "n2")
	h.o.requestRebalances(context.Background(), slog.Default(), []string{"n3"})
	if rb := h.service("web").GetRebalance(); rb != nil {
		t.Fatalf("rebalance_on_join off, yet rebalance = %v", rb)
	}
	h.update(func(tx *store.Tx) error {
		c := tx.Cluster()
		c.RebalanceOnJoin = true
		return tx.Update(c)
	})
	h.o.requestRebalances(context.Background(), slog.Default(), []string{"n3"})
	if rb := h.service("web").GetRebalance(); rb.GetState() != api.RebalanceState_REBALANCE_STATE_REQUESTED {
		t.Fatalf("rebalance = %v, want requested", rb)
	}
}

// A replica still stopping counts against its node for the scheduler: the
// rebalance plans nothing until it has ended, so it counts as the
// scheduler places.
func TestRebalanceWaitsForStoppingReplicas(t *testing.T) {
	h := newHarness(t)
	piled(t, h, startFirst(), "n1", "n1", "n2")
	stopped := h.liveTasks("web")[2] // on n2
	h.update(func(tx *store.Tx) error {
		task := tx.GetTask(stopped.Id)
		task.DesiredState = sShutdown
		return tx.Update(task)
	})
	h.step() // refills its slot with a pending replica
	h.requestRebalance("web")
	h.step()
	if rb := h.service("web").GetRebalance(); rb.GetState() != api.RebalanceState_REBALANCE_STATE_REQUESTED || len(h.moves("web")) != 0 {
		t.Fatalf("rebalance = %v with %d moves while a replica stops, want it to wait", rb, len(h.moves("web")))
	}
	h.report(stopped.Id, "", sShutdown, 0)
	h.step()
	if rb := h.service("web").GetRebalance(); rb.GetState() == api.RebalanceState_REBALANCE_STATE_REQUESTED {
		t.Fatalf("rebalance = %v after the replica stopped, want it planned", rb)
	}
}
