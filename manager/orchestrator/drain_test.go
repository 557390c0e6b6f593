package orchestrator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// startDrain does what the control API does for `jaco node update
// --availability drain` (remove: `jaco node remove`).
func (h *harness) startDrain(nodeID string, timeout time.Duration, remove, force bool) {
	h.t.Helper()
	h.changeNode(nodeID, func(n *api.Node) {
		n.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN
		n.Drain = &api.NodeDrain{State: api.DrainState_DRAIN_STATE_DRAINING, Remove: remove, Force: force}
		if timeout > 0 {
			n.Drain.ReplacementTimeout = durationpb.New(timeout)
		}
	})
}

// drainPass runs one pass of the drain bookkeeping and returns the
// node's drain afterwards (nil when the node is gone).
func (h *harness) drainPass(d *drainer, nodeID string) (*api.NodeDrain, time.Time) {
	h.t.Helper()
	wake, err := d.pass(context.Background())
	if err != nil {
		h.t.Fatalf("drain pass: %v", err)
	}
	return h.node(nodeID).GetDrain(), wake
}

func replacementsOf(ts []*api.Task, old *api.Task) []*api.Task {
	var out []*api.Task
	for _, t := range ts {
		if t.Replaces == old.Id {
			out = append(out, t)
		}
	}
	return out
}

func wantDrain(t *testing.T, h *harness, got *api.NodeDrain, st api.DrainState, moved, total uint32) {
	t.Helper()
	if got.GetState() != st || got.GetMoved() != moved || got.GetTotal() != total {
		t.Fatalf("drain = %v %d/%d (%q), want %v %d/%d\n%s", got.GetState(), got.GetMoved(), got.GetTotal(),
			got.GetMessage(), st, moved, total, h.dump())
	}
}

func TestDrainReplacesStartFirstAndStopsOldOnlyOnceReplacementRuns(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(replicated("web", 2))
	h.step()
	olds := h.runningOn("web", "n1")
	d := h.o.newDrainer()

	h.startDrain("n1", 0, false, false)
	h.step()
	all := h.tasks("web")
	for _, old := range olds {
		if cur := h.task(old.Id); !live(cur) {
			t.Fatalf("old task %s stopped before any replacement ran\n%s", old.Id, h.dump())
		}
		rs := replacementsOf(all, old)
		if len(rs) != 1 || rs[0].Slot != old.Slot || rs[0].NodeId != "" || state(rs[0]) != sPending || rs[0].NotBefore != nil {
			t.Fatalf("replacements of %s = %v, want one pending unplaced task in slot %d\n%s", old.Id, rs, old.Slot, h.dump())
		}
	}
	dr, wake := h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINING, 0, 2)
	if !wake.Equal(epoch.Add(api.DefaultDrainTimeout)) {
		t.Errorf("wake = %v, want the default timeout after the first sight", wake)
	}

	r1 := replacementsOf(h.tasks("web"), olds[0])[0]
	h.report(r1.Id, "n2", api.TaskState_TASK_STATE_STARTING, 0) // started, not yet healthy
	h.step()
	if !live(h.task(olds[0].Id)) {
		t.Fatalf("old task stopped while its replacement is only starting\n%s", h.dump())
	}
	h.report(r1.Id, "n2", sRunning, 0)
	h.step()
	if got := h.task(olds[0].Id).DesiredState; got != sShutdown {
		t.Fatalf("old task of slot %d desired %v once its replacement runs, want SHUTDOWN\n%s", olds[0].Slot, got, h.dump())
	}
	if !live(h.task(olds[1].Id)) {
		t.Fatalf("old task of slot %d stopped though its replacement has not run\n%s", olds[1].Slot, h.dump())
	}
	dr, _ = h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINING, 1, 2)

	r2 := replacementsOf(h.tasks("web"), olds[1])[0]
	h.report(r2.Id, "n2", sRunning, 0)
	h.step()
	dr, _ = h.drainPass(d, "n1")
	// Both moved, but the old replicas have not reported their end yet.
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINING, 2, 2)
	for _, old := range olds {
		h.report(old.Id, "", sShutdown, 0)
	}
	h.step()
	dr, _ = h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINED, 2, 2)
	if got := nodesOf(h.liveTasks("web")); !slices.Equal(got, []string{"n2", "n2"}) {
		t.Fatalf("live tasks on %v, want two on n2\n%s", got, h.dump())
	}
}

func TestDrainTimesOutWhenReplacementNeverRuns(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicated("web", 1))
	h.step()
	old := h.runningOn("web", "n1")[0]
	d := h.o.newDrainer()
	h.startDrain("n1", time.Minute, false, false)
	h.step()
	dr, wake := h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINING, 0, 1)
	if !wake.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("wake = %v, want the configured minute", wake)
	}
	h.clock.Advance(59 * time.Second)
	dr, _ = h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINING, 0, 1)

	h.clock.Advance(time.Second)
	dr, _ = h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_TIMED_OUT, 0, 1)
	r := replacementsOf(h.tasks("web"), old)[0]
	if !slices.Equal(dr.StuckTaskIds, []string{r.Id}) || !strings.HasPrefix(dr.Message, "pending: drain_timeout: web.1") ||
		!strings.Contains(dr.Message, old.Id) {
		t.Fatalf("timed out drain stuck=%v message %q, want the replacement %s and a message naming web.1 and %s",
			dr.StuckTaskIds, dr.Message, r.Id, old.Id)
	}
	h.step()
	if !live(h.task(old.Id)) || !live(h.task(r.Id)) {
		t.Fatalf("after the timeout the old replica must keep running and the replacement stays\n%s", h.dump())
	}
}

func TestDrainDropsGlobalReplicas(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	h.createService(global("agent"))
	h.step()
	h.runningOn("agent", "")
	d := h.o.newDrainer()
	h.startDrain("n1", 0, false, false)
	h.step()
	if got := nodesOf(h.liveTasks("agent")); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("global tasks live on %v, want n2 only\n%s", got, h.dump())
	}
	for _, task := range h.tasks("agent") {
		if task.Replaces != "" {
			t.Fatalf("global task %s got a replacement\n%s", task.Id, h.dump())
		}
	}
	dr, _ := h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINING, 1, 1) // dropped, still stopping
	for _, task := range h.tasks("agent") {
		if task.NodeId == "n1" {
			h.report(task.Id, "", sShutdown, 0)
		}
	}
	dr, _ = h.drainPass(d, "n1")
	wantDrain(t, h, dr, api.DrainState_DRAIN_STATE_DRAINED, 1, 1)
}

func TestDrainPinnedReplicas(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(map[bool]string{false: "unforced", true: "forced"}[force], func(t *testing.T) {
			h := newHarness(t)
			h.setNode(readyNode("n1", nil))
			h.setNode(readyNode("n2", nil))
			svc := replicated("db", 1)
			svc.Spec.Placement = &api.Placement{PinNode: "host-n1"}
			h.createService(svc)
			h.step()
			old := h.runningOn("db", "n1")[0]
			h.startDrain("n1", 0, false, force)
			h.step()
			rs := replacementsOf(h.tasks("db"), old)
			if force {
				// Stopped without a replacement; the slot waits, unplaceable,
				// for a node its pin allows.
				if cur := h.task(old.Id); cur.DesiredState != sShutdown || len(rs) != 0 {
					t.Fatalf("forced drain: pinned task desired %v, %d replacements; want SHUTDOWN and none\n%s",
						cur.DesiredState, len(rs), h.dump())
				}
				return
			}
			if !live(h.task(old.Id)) || len(rs) != 1 {
				t.Fatalf("unforced drain: the pinned replica must keep running beside one (unplaceable) replacement\n%s", h.dump())
			}
		})
	}
}

// fakeRemover deletes the node, as membership does for a worker, and
// records the call.
type fakeRemover struct {
	st      *store.Store
	mu      sync.Mutex
	removed []string
}

func (f *fakeRemover) RemoveNode(ctx context.Context, n *api.Node) error {
	f.mu.Lock()
	f.removed = append(f.removed, n.Id)
	f.mu.Unlock()
	return f.st.Update(ctx, func(tx *store.Tx) error { return tx.Delete(tx.GetNode(n.Id)) })
}

func (f *fakeRemover) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

func TestDrainedNodeIsRemovedWhenAsked(t *testing.T) {
	h := newHarness(t)
	rm := &fakeRemover{st: h.st}
	h.o.remover = rm
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	d := h.o.newDrainer()
	h.startDrain("n2", 0, false, false) // drain only: stays
	h.startDrain("n1", 0, true, false)
	h.drainPass(d, "n1")
	if got := rm.ids(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("removed %v, want n1 only", got)
	}
	wantDrain(t, h, h.node("n2").GetDrain(), api.DrainState_DRAIN_STATE_DRAINED, 0, 0)
}

func TestDrainWithoutRemoverDeletesWorkerOnly(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("w", nil))
	mgr := readyNode("m", nil)
	mgr.RaftId = 7
	h.setNode(mgr)
	h.startDrain("w", 0, true, false)
	h.startDrain("m", 0, true, false)
	d := h.o.newDrainer()
	if dr, _ := h.drainPass(d, "w"); dr != nil {
		t.Fatalf("drained worker still there: %v", dr)
	}
	if dr, _ := h.drainPass(d, "m"); dr.GetState() != api.DrainState_DRAIN_STATE_DRAINED {
		t.Fatalf("manager drain %v, want DRAINED, waiting for a remover", dr)
	}
}

func TestCancelledDrainKeepsTheRunningReplica(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.createService(replicated("web", 1))
	h.step()
	old := h.runningOn("web", "n1")[0]
	h.startDrain("n1", 0, false, false)
	h.step()
	if len(replacementsOf(h.tasks("web"), old)) != 1 {
		t.Fatalf("no replacement\n%s", h.dump())
	}
	h.changeNode("n1", func(n *api.Node) {
		n.Availability = api.NodeAvailability_NODE_AVAILABILITY_ACTIVE
		n.Drain = nil
	})
	h.step()
	if got := h.liveTasks("web"); len(got) != 1 || got[0].Id != old.Id {
		t.Fatalf("after cancelling, live %v, want only the old running task\n%s", got, h.dump())
	}
}

func TestRunRemovesAnEmptyDrainedNode(t *testing.T) {
	h := newHarness(t)
	rm := &fakeRemover{st: h.st}
	h.o.remover = rm
	h.setNode(readyNode("n1", nil))
	h.run()
	h.startDrain("n1", 0, true, false)
	h.waitFor("n1 removed", func() bool { return slices.Equal(rm.ids(), []string{"n1"}) })
}

type refusingRemover struct{}

func (refusingRemover) RemoveNode(context.Context, *api.Node) error {
	return errors.New("no quorum")
}

func TestFailedRemovalIsShownOnTheNodeAndRetried(t *testing.T) {
	h := newHarness(t)
	h.o.remover = refusingRemover{}
	h.setNode(readyNode("n1", nil))
	d := h.o.newDrainer()
	h.startDrain("n1", 0, true, false)
	if _, err := d.pass(context.Background()); err == nil {
		t.Fatal("a failed removal must fail the pass, so that it is retried")
	}
	n := h.node("n1")
	if n.GetDrain().GetState() != api.DrainState_DRAIN_STATE_DRAINED || !strings.Contains(n.GetDrain().GetMessage(), "removal failed, retrying: ") || !strings.HasSuffix(n.GetDrain().GetMessage(), "no quorum") {
		t.Fatalf("drain %v, want DRAINED saying the removal failed", n.GetDrain())
	}
}
