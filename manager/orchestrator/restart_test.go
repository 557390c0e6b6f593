package orchestrator

import (
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

func TestRestartPolicy(t *testing.T) {
	const (
		anyC  = api.RestartCondition_RESTART_CONDITION_ANY
		onFai = api.RestartCondition_RESTART_CONDITION_ON_FAILURE
		noneC = api.RestartCondition_RESTART_CONDITION_NONE
	)
	for _, tc := range []struct {
		name      string
		condition api.RestartCondition
		end       api.TaskState
		exitCode  int32
		restart   bool
	}{
		{"any/complete", anyC, sComplete, 0, true},
		{"any/failed", anyC, sFailed, 1, true},
		{"on-failure/complete", onFai, sComplete, 0, false},
		{"on-failure/failed", onFai, sFailed, 2, true},
		{"on-failure/rejected", onFai, api.TaskState_TASK_STATE_REJECTED, 0, true},
		{"on-failure/complete-nonzero", onFai, sComplete, 3, true},
		{"none/failed", noneC, sFailed, 1, false},
		{"none/complete", noneC, sComplete, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.setNode(readyNode("n1", nil))
			svc := replicated("web", 1)
			svc.Spec.Restart = restartPolicy(tc.condition, 7*time.Second, 0, 0)
			h.createService(svc)
			h.step()
			first := h.liveTasks("web")[0]
			h.report(first.Id, "n1", sRunning, 0)
			h.clock.Advance(time.Minute)
			h.report(first.Id, "n1", tc.end, tc.exitCode)
			h.step()
			old := h.tasks("web")[0]
			if old.Id != first.Id {
				t.Fatalf("first task gone\n%s", h.dump())
			}
			ts := h.liveTasks("web")
			if !tc.restart {
				if len(ts) != 0 || old.DesiredState != sComplete {
					t.Fatalf("want no restart and the old task desired COMPLETE (slot finished)\n%s", h.dump())
				}
				// The finished slot is not refilled, also not later.
				h.clock.Advance(time.Hour)
				h.step()
				if len(h.liveTasks("web")) != 0 {
					t.Fatalf("finished slot refilled\n%s", h.dump())
				}
				return
			}
			if len(ts) != 1 || ts[0].Slot != 1 || old.DesiredState != sShutdown {
				t.Fatalf("want a replacement in slot 1 and the old task desired SHUTDOWN\n%s", h.dump())
			}
			wantNB := epoch.Add(time.Minute + 7*time.Second)
			if got := ts[0].GetNotBefore().AsTime(); !got.Equal(wantNB) {
				t.Fatalf("not_before = %v, want now + delay = %v", got, wantNB)
			}
		})
	}
}

func TestRestartDefaultDelay(t *testing.T) {
	h := newHarness(t)
	h.createService(replicated("web", 1))
	h.step()
	h.report(h.liveTasks("web")[0].Id, "n1", sFailed, 1)
	h.step()
	if got := h.liveTasks("web")[0].GetNotBefore().AsTime(); !got.Equal(epoch.Add(DefaultRestartDelay)) {
		t.Fatalf("not_before = %v, want %v", got, epoch.Add(DefaultRestartDelay))
	}
}

// failLive makes the live task of slot 1 fail and reconciles.
func failLive(t *testing.T, h *harness) {
	t.Helper()
	ts := h.liveTasks("web")
	if len(ts) != 1 {
		t.Fatalf("want one live task\n%s", h.dump())
	}
	h.report(ts[0].Id, "n1", sFailed, 1)
	h.step()
}

func TestMaxAttemptsStopsRestarting(t *testing.T) {
	h := newHarness(t)
	svc := replicated("web", 1)
	svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_ANY, time.Second, 2, 0)
	h.createService(svc)
	h.step()
	failLive(t, h) // restart 1
	failLive(t, h) // restart 2
	failLive(t, h) // no more
	if n := len(h.liveTasks("web")); n != 0 {
		t.Fatalf("%d live tasks after max_attempts, want 0\n%s", n, h.dump())
	}
	ts := h.tasks("web")
	if len(ts) != 3 || ts[2].DesiredState != sComplete || ts[2].GetStatus().GetState() != sFailed {
		t.Fatalf("want 3 tasks, the last failed and desired COMPLETE\n%s", h.dump())
	}
	// A new spec gives a new budget.
	h.changeService("web", func(s *api.ServiceSpec) { s.Image = "img:2" })
	h.step()
	if n := len(h.liveTasks("web")); n != 1 {
		t.Fatalf("spec update did not refill the finished slot\n%s", h.dump())
	}
	failLive(t, h)
	if n := len(h.liveTasks("web")); n != 1 {
		t.Fatalf("first failure of the new spec not restarted\n%s", h.dump())
	}
}

func TestMaxAttemptsCountsOnlyWithinWindow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gap     time.Duration
		restart bool
	}{
		{"inside window", 30 * time.Second, false},
		{"outside window", 2 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			svc := replicated("web", 1)
			svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_ANY, 5*time.Second, 1, time.Minute)
			h.createService(svc)
			h.step()
			failLive(t, h) // the one restart allowed in the window
			h.clock.Advance(tc.gap)
			failLive(t, h)
			if got := len(h.liveTasks("web")) == 1; got != tc.restart {
				t.Fatalf("restarted = %v, want %v\n%s", got, tc.restart, h.dump())
			}
		})
	}
}

func TestHistoryIsTrimmed(t *testing.T) {
	h := newHarness(t)
	svc := replicated("web", 1)
	svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_ANY, 0, 0, 0)
	h.createService(svc)
	h.step()
	for range 12 {
		failLive(t, h)
	}
	ts := h.tasks("web")
	if len(ts) != minHistory+1 || !live(ts[len(ts)-1]) {
		t.Fatalf("%d tasks, want %d terminal and one live\n%s", len(ts), minHistory, h.dump())
	}
}

func TestHistoryKeepsWhatMaxAttemptsCounts(t *testing.T) {
	h := newHarness(t)
	svc := replicated("web", 1)
	svc.Spec.Restart = restartPolicy(api.RestartCondition_RESTART_CONDITION_ANY, 0, 8, 0)
	h.createService(svc)
	h.step()
	for range 8 {
		failLive(t, h)
	}
	if len(h.liveTasks("web")) != 1 {
		t.Fatalf("stopped before 8 restarts\n%s", h.dump())
	}
	failLive(t, h)
	if len(h.liveTasks("web")) != 0 {
		t.Fatalf("restarted a 9th time\n%s", h.dump())
	}
}
