package rolemanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/syncbuf"
	"github.com/jaco-project/jaco/internal/testclock"
	"github.com/jaco-project/jaco/internal/waitfor"
	jacoraft "github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/voterset"
)

// The manager's raft member is what the reconciler drives.
var _ Raft = (*jacoraft.Node)(nil)

func newTestReconciler(f *fakeRaft) (*VoterReconciler, *testclock.Clock, *syncbuf.Buffer) {
	clock := testclock.New(epoch)
	logs := &syncbuf.Buffer{}
	r := NewVoterReconciler(Config{
		Raft:   f,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    clock.Now,
	})
	return r, clock, logs
}

// tick runs one Tick and checks that it changed at most one vote, and
// exactly the one it reported.
func tick(t *testing.T, r *VoterReconciler, f *fakeRaft) Decision {
	t.Helper()
	before := f.voterNames()
	d, err := r.Tick(context.Background())
	if err != nil {
		t.Fatalf("Tick: %v", err)
	}
	after := f.voterNames()
	var want []string
	switch d.Action {
	case NoAction:
		want = before
	case Promote:
		want = append(slices.Clone(before), d.NodeID)
		slices.Sort(want)
	case Demote:
		want = slices.DeleteFunc(slices.Clone(before), func(n string) bool { return n == d.NodeID })
	}
	if !slices.Equal(after, want) {
		t.Fatalf("Tick decided %v %s but voters went from %v to %v", d.Action, d.NodeID, before, after)
	}
	return d
}

// TestReconcilerGrow joins managers one at a time up to 7 and ticks once a
// second until the voter set is stable: it must be at the target each
// time, reached one change per tick.
func TestReconcilerGrow(t *testing.T) {
	f := newFakeRaft("m1")
	r, clock, _ := newTestReconciler(f)
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("single manager: %+v", d)
	}
	var history []int
	for n := 2; n <= 7; n++ {
		f.join("m" + string(rune('0'+n)))
		joined := clock.Now()
		var changes int
		for i := 0; ; i++ {
			if i > 20 {
				t.Fatalf("%d managers: not stable after %d ticks; voters %v", n, i, f.voterNames())
			}
			clock.Advance(time.Second)
			f.replicate()
			d := tick(t, r, f)
			if d.Action == Demote {
				t.Fatalf("%d managers: growing demoted %s", n, d.NodeID)
			}
			if d.Action != NoAction {
				changes++
				continue
			}
			if clock.Now().Sub(joined) > DefaultPromoteAfter {
				break // everyone is eligible and nothing is left to do
			}
		}
		voters := len(f.voterNames())
		if want := voterset.TargetVoters(n); voters != want {
			t.Fatalf("%d managers: stable at %d voters %v, want %d", n, voters, f.voterNames(), want)
		}
		if n%2 == 1 && changes != 2 || n%2 == 0 && changes != 0 {
			t.Fatalf("%d managers: %d changes", n, changes)
		}
		history = append(history, voters)
	}
	if want := []int{1, 3, 3, 5, 5, 7}; !slices.Equal(history, want) {
		t.Fatalf("voters at 2..7 managers: %v, want %v", history, want)
	}
	// The leader, m1, stayed a voter; every other manager is one too.
	if got, want := f.voterNames(), []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}; !slices.Equal(got, want) {
		t.Fatalf("voters %v, want %v", got, want)
	}
}

func TestReconcilerFollowerDoesNothing(t *testing.T) {
	f := newFakeRaft("a")
	b := f.join("b")
	f.join("c")
	f.replicate()
	f.set(func(f *fakeRaft) { f.lead = b })
	r, clock, _ := newTestReconciler(f)
	clock.Advance(time.Hour)
	d := tick(t, r, f)
	if d.Action != NoAction || !strings.Contains(d.Reason, "not the leader") {
		t.Fatalf("follower decided %+v", d)
	}
	f.set(func(f *fakeRaft) { f.lead = 0 })
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("without a leader: %+v", d)
	}
	if changes, _ := f.stats(); changes != 0 {
		t.Fatalf("%d changes by a follower", changes)
	}
}

// TestReconcilerCatchUpGate: a learner is promoted only once its Match
// reaches the commit index, it is recently active, and PromoteAfter has
// passed since the leader first saw it.
func TestReconcilerCatchUpGate(t *testing.T) {
	f := newFakeRaft("a")
	b := f.join("b")
	c := f.join("c")
	f.set(func(f *fakeRaft) { f.lagging[b] = true })
	r, clock, _ := newTestReconciler(f)

	// First sighting; c has not replicated either.
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("%+v", d)
	}
	clock.Advance(DefaultPromoteAfter)
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("nobody caught up: %+v", d)
	}
	// c catches up, but goes quiet.
	f.replicate()
	f.set(func(f *fakeRaft) {
		p := f.progress[c]
		p.RecentActive = false
		f.progress[c] = p
	})
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("c not recently active: %+v", d)
	}
	// c is back: it goes before b, which still lags.
	f.replicate()
	if d := tick(t, r, f); d.Action != Promote || d.NodeID != "c" {
		t.Fatalf("want promote c, got %+v", d)
	}
	// b catches up to an older index only.
	f.set(func(f *fakeRaft) {
		p := f.progress[b]
		p.Match, p.RecentActive = f.commit-1, true
		f.progress[b] = p
	})
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("b behind the commit index: %+v", d)
	}
	f.set(func(f *fakeRaft) { delete(f.lagging, b) })
	f.replicate()
	if d := tick(t, r, f); d.Action != Promote || d.NodeID != "b" {
		t.Fatalf("want promote b, got %+v", d)
	}
}

// TestReconcilerNewTermRestartsClocks: a learner eligible under one term
// waits PromoteAfter again once a new term starts (a new leader, or this
// one re-elected).
func TestReconcilerNewTermRestartsClocks(t *testing.T) {
	f := newFakeRaft("a")
	f.join("b")
	f.join("c")
	r, clock, _ := newTestReconciler(f)
	tick(t, r, f)
	clock.Advance(DefaultPromoteAfter)
	f.replicate()
	f.set(func(f *fakeRaft) { f.term++ })
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("new term: %+v", d)
	}
	clock.Advance(DefaultPromoteAfter - time.Millisecond)
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("new term, window not over: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d := tick(t, r, f); d.Action != Promote || d.NodeID != "b" {
		t.Fatalf("want promote b, got %+v", d)
	}

	// Losing leadership forgets the clocks too.
	f.set(func(f *fakeRaft) { f.lead = 0 })
	tick(t, r, f)
	f.set(func(f *fakeRaft) { f.lead = f.id })
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("leader again in the same term: %+v", d)
	}
}

func TestReconcilerNeverDemotesLeader(t *testing.T) {
	f := newFakeRaft("z")
	a := f.join("a")
	f.set(func(f *fakeRaft) {
		delete(f.learners, a)
		f.voters[a] = true
	})
	r, _, _ := newTestReconciler(f)
	if d := tick(t, r, f); d.Action != Demote || d.NodeID != "a" {
		t.Fatalf("want demote a, got %+v", d)
	}
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("%+v", d)
	}
	if got := f.voterNames(); !slices.Equal(got, []string{"z"}) {
		t.Fatalf("voters %v", got)
	}
}

func TestReconcilerJointConfigWaits(t *testing.T) {
	f := newFakeRaft("a")
	f.join("b")
	f.join("c")
	f.replicate()
	f.set(func(f *fakeRaft) { f.joint = true })
	r, clock, _ := newTestReconciler(f)
	tick(t, r, f)
	clock.Advance(time.Hour)
	if d := tick(t, r, f); d.Action != NoAction || !strings.Contains(d.Reason, "joint") {
		t.Fatalf("%+v", d)
	}
}

// TestReconcilerMemberListMismatch: a raft id in the configuration the
// member list does not name is never chosen; a member list entry raft's
// configuration lacks is ignored. Each is logged once.
func TestReconcilerMemberListMismatch(t *testing.T) {
	f := newFakeRaft("a")
	ghost := f.join("ghost")
	f.join("b")
	f.join("c")
	f.replicate()
	f.set(func(f *fakeRaft) {
		delete(f.nodeIDs, ghost) // in the configuration, not in the list
		f.nodeIDs[42] = "stray"  // in the list, not in the configuration
	})
	r, clock, logs := newTestReconciler(f)
	tick(t, r, f)
	clock.Advance(DefaultPromoteAfter)
	f.replicate()
	for range 4 {
		tick(t, r, f)
	}
	// ghost, a nonvoter without a node id, is neither counted nor chosen:
	// 3 managers, 3 voters.
	if got, want := f.voterNames(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("voters %v, want %v", got, want)
	}
	out := logs.String()
	if n := strings.Count(out, "the member list does not name"); n != 1 {
		t.Errorf("config-only member logged %d times:\n%s", n, out)
	}
	if n := strings.Count(out, "not in the raft configuration"); n != 1 {
		t.Errorf("list-only member logged %d times:\n%s", n, out)
	}
}

func TestReconcilerChangeError(t *testing.T) {
	f := newFakeRaft("a")
	f.join("b")
	f.join("c")
	f.replicate()
	boom := errors.New("boom")
	f.set(func(f *fakeRaft) { f.changeErr = boom })
	r, clock, _ := newTestReconciler(f)
	tick(t, r, f)
	clock.Advance(DefaultPromoteAfter)
	d, err := r.Tick(context.Background())
	if !errors.Is(err, boom) || d.Action != Promote || d.NodeID != "b" {
		t.Fatalf("Tick = %+v, %v; want promote b failing with boom", d, err)
	}
	if !strings.Contains(err.Error(), "promote b") {
		t.Fatalf("error %q does not say what failed", err)
	}
	f.set(func(f *fakeRaft) { f.changeErr = nil })
	if d := tick(t, r, f); d.Action != Promote || d.NodeID != "b" {
		t.Fatalf("retry: %+v", d)
	}
}

// TestReconcilerConcurrentTicks: ticks are serialized, so concurrent
// callers still make one change per decision and overshoot nothing.
func TestReconcilerConcurrentTicks(t *testing.T) {
	f := newFakeRaft("a")
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		f.join(n)
	}
	f.replicate()
	r, clock, _ := newTestReconciler(f)
	tick(t, r, f)
	clock.Advance(DefaultPromoteAfter)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := r.Tick(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if changes, _ := f.stats(); changes != 6 {
		t.Fatalf("%d changes, want 6", changes)
	}
	if got := len(f.voterNames()); got != 7 {
		t.Fatalf("%d voters, want 7", got)
	}
}

// ticks is a condition of waitfor.Holds: calls, the status calls counted
// so far, has reached n.
func ticks(calls func() int, n int) func() (bool, string) {
	return func() (bool, string) {
		got := calls()
		return got >= n, fmt.Sprintf("%d status calls", got)
	}
}

// runInBackground starts r.Run and returns a function that cancels it and
// fails unless it returns promptly.
func runInBackground(t *testing.T, r *VoterReconciler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	return func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatal("Run did not return within 1s of cancellation")
		}
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	f := newFakeRaft("a")
	statusCalls := func() int { _, n := f.stats(); return n }

	r := NewVoterReconciler(Config{Raft: f, Interval: time.Millisecond})
	stop := runInBackground(t, r)
	waitfor.Holds(t, 5*time.Second, "three ticks", ticks(statusCalls, 3))
	stop()

	// A long interval does not delay the return.
	before := statusCalls()
	r = NewVoterReconciler(Config{Raft: f, Interval: time.Hour})
	stop = runInBackground(t, r)
	waitfor.Holds(t, 5*time.Second, "the first tick", ticks(statusCalls, before+1))
	stop()

	// Neither does a change waiting to be applied.
	f.join("b")
	f.join("c")
	f.replicate()
	f.set(func(f *fakeRaft) { f.block = true })
	clock := testclock.New(epoch)
	r = NewVoterReconciler(Config{Raft: f, Interval: time.Millisecond, Now: clock.Now})
	before = statusCalls()
	stop = runInBackground(t, r)
	waitfor.Holds(t, 5*time.Second, "a tick", ticks(statusCalls, before+1))
	clock.Advance(time.Hour)
	waitfor.Holds(t, 5*time.Second, "a promotion waiting to apply", func() (bool, string) {
		var n int
		f.set(func(f *fakeRaft) { n = f.blocked })
		return n > 0, fmt.Sprintf("%d changes blocked", n)
	})
	stop()

	// A cancelled context stops Run before its first tick.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before = statusCalls()
	NewVoterReconciler(Config{Raft: f}).Run(ctx)
	if statusCalls() != before {
		t.Fatal("Run ticked with a cancelled context")
	}
}

// TestRunRetriesAfterErrors: Run logs a failed change and tries again.
func TestRunRetriesAfterErrors(t *testing.T) {
	f := newFakeRaft("a")
	f.join("b")
	f.join("c")
	f.replicate()
	f.set(func(f *fakeRaft) { f.changeErr = errors.New("boom") })
	clock := testclock.New(epoch)
	logs := &syncbuf.Buffer{}
	r := NewVoterReconciler(Config{Raft: f, Interval: time.Millisecond, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	stop := runInBackground(t, r)
	waitfor.Holds(t, 5*time.Second, "the first tick", ticks(func() int { _, n := f.stats(); return n }, 1))
	clock.Advance(time.Hour)
	waitfor.Holds(t, 5*time.Second, "three failures logged", func() (bool, string) {
		l := logs.String()
		return strings.Count(l, "boom") >= 3, l
	})
	f.set(func(f *fakeRaft) { f.changeErr = nil })
	waitfor.Holds(t, 5*time.Second, "three voters", func() (bool, string) {
		v := f.voterNames()
		return len(v) == 3, fmt.Sprint("voters ", v)
	})
	stop()
}

// TestActiveSightingOutlivesRaftsClear: raft clears RecentActive every
// election timeout; a member seen active within activeWindow still counts
// as caught up, one not seen active for longer does not.
func TestActiveSightingOutlivesRaftsClear(t *testing.T) {
	f := newFakeRaft("a")
	b, c := f.join("b"), f.join("c")
	f.replicate()
	r, clock, _ := newTestReconciler(f)
	setActive := func(id uint64, active bool) {
		f.set(func(f *fakeRaft) {
			pr := f.progress[id]
			pr.RecentActive = active
			f.progress[id] = pr
		})
	}
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("first tick: %v, want none (b and c too new)", d)
	}
	// Old enough, but not seen active for longer than the window.
	setActive(b, false)
	setActive(c, false)
	clock.Advance(DefaultPromoteAfter + activeWindow + time.Second)
	if d := tick(t, r, f); d.Action != NoAction {
		t.Fatalf("members not seen active for %s: %v, want none", activeWindow+time.Second, d)
	}
	// Seen active at this tick: promoted.
	setActive(b, true)
	setActive(c, true)
	if d := tick(t, r, f); d.Action != Promote || d.RaftID != b {
		t.Fatalf("tick with b active: %v, want promote b", d)
	}
	// c's flag cleared by raft since, but seen active a second ago.
	setActive(c, false)
	clock.Advance(time.Second)
	if d := tick(t, r, f); d.Action != Promote || d.RaftID != c {
		t.Fatalf("c seen active 1s ago: %v, want promote c", d)
	}
}
