package health

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// notifier is a replica whose notify socket messages the test sends.
type notifier struct {
	target
	msgs chan exec.Notification
}

func newNotifier() *notifier { return &notifier{msgs: make(chan exec.Notification)} }

// Notifications passes the test's messages on until ctx ends, as the
// hooks runtime's reader does.
func (n *notifier) Notifications(ctx context.Context) (<-chan exec.Notification, error) {
	out := make(chan exec.Notification)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-n.msgs:
				select {
				case out <- m:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func notifyCheck(interval time.Duration, retries uint32, startPeriod time.Duration) *api.HealthCheck {
	return &api.HealthCheck{
		Test:     &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}},
		Interval: durationpb.New(interval), Retries: retries, StartPeriod: durationpb.New(startPeriod),
	}
}

type runResult struct {
	err error
	at  time.Time
}

// start runs the check in the background; its result arrives on the
// returned channel.
func start(t *testing.T, hc *api.HealthCheck, tg Target, w Watch) <-chan runResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		err := RunWatch(ctx, hc, tg, w)
		done <- runResult{err, time.Now()}
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return done
}

func send(t *testing.T, n *notifier, m exec.Notification) {
	t.Helper()
	select {
	case n.msgs <- m:
	case <-time.After(5 * time.Second):
		t.Fatal("the check stopped reading notifications")
	}
}

// TestNotifyReadyThenWatchdog: healthy only once READY=1 came (WATCHDOG=1
// before it changes nothing); WATCHDOG=1 within the interval keeps it so;
// retries silent intervals make it unhealthy.
func TestNotifyReadyThenWatchdog(t *testing.T) {
	n := newNotifier()
	var healthy atomic.Int32
	const interval, retries = 50 * time.Millisecond, 3
	done := start(t, notifyCheck(interval, retries, 0), n, Watch{Healthy: func() { healthy.Add(1) }})

	// Long past interval × retries without READY=1: no start period, no limit.
	for range 10 {
		send(t, n, exec.Notification{Watchdog: true})
		time.Sleep(interval)
	}
	if healthy.Load() != 0 {
		t.Fatal("healthy before READY=1")
	}
	select {
	case r := <-done:
		t.Fatalf("check ended before READY=1 without a start period: %v", r.err)
	default:
	}
	send(t, n, exec.Notification{Ready: true})
	for deadline := time.Now().Add(5 * time.Second); healthy.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("READY=1 did not make the replica healthy")
		}
		time.Sleep(time.Millisecond)
	}
	// Pings every interval/2 for 10 intervals keep it healthy.
	for range 20 {
		send(t, n, exec.Notification{Watchdog: true})
		time.Sleep(interval / 2)
	}
	silentSince := time.Now()
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrUnhealthy) || !strings.Contains(r.err.Error(), "no WATCHDOG=1") {
			t.Fatalf("after silence: %v, want unhealthy for no WATCHDOG=1", r.err)
		}
		if r.at.Before(silentSince) {
			t.Fatalf("unhealthy while WATCHDOG=1 kept coming: %v", r.err)
		}
		if took := r.at.Sub(silentSince); took < interval*(retries-1) {
			t.Fatalf("unhealthy %v after the last WATCHDOG=1, before %d silent intervals of %v", took, retries, interval)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a silent replica stayed healthy")
	}
	if healthy.Load() != 1 {
		t.Fatalf("healthy called %d times, want 1", healthy.Load())
	}
}

func TestNotifyStartPeriod(t *testing.T) {
	n := newNotifier()
	begun := time.Now()
	done := start(t, notifyCheck(time.Hour, 1, 100*time.Millisecond), n, Watch{})
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrUnhealthy) || !strings.Contains(r.err.Error(), "no READY=1 within the start period") {
			t.Fatalf("check = %v, want unhealthy for no READY=1", r.err)
		}
		if r.at.Sub(begun) < 100*time.Millisecond {
			t.Fatalf("unhealthy after %v, within the start period", r.at.Sub(begun))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no READY=1 within the start period was not unhealthy")
	}
}

func TestNotifyStatusAndTrigger(t *testing.T) {
	n := newNotifier()
	texts := make(chan string, 4)
	done := start(t, notifyCheck(time.Hour, 1, 0), n, Watch{Status: func(s string) { texts <- s }})
	send(t, n, exec.Notification{Status: "loading 3 of 7"})
	select {
	case got := <-texts:
		if got != "loading 3 of 7" {
			t.Fatalf("status %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("STATUS= never reached the watcher")
	}
	send(t, n, exec.Notification{WatchdogTrigger: true})
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrUnhealthy) || !strings.Contains(r.err.Error(), "WATCHDOG=trigger") {
			t.Fatalf("check = %v, want unhealthy for WATCHDOG=trigger", r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WATCHDOG=trigger was not unhealthy")
	}
}

func TestNotifyNeedsNotifier(t *testing.T) {
	err := RunWatch(context.Background(), notifyCheck(time.Second, 1, 0), &target{}, Watch{})
	if !errors.Is(err, ErrUnhealthy) || !errors.Is(err, ErrNoNotifier) {
		t.Fatalf("notify check on a target without a socket = %v, want unhealthy, no notifier", err)
	}
}
