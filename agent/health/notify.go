package health

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// Watch is what Run tells its caller on the way, besides the verdict it
// returns.
type Watch struct {
	// Healthy is called on every transition to healthy.
	Healthy func()
	// Status, when set, is called with each STATUS= text a notify check
	// receives.
	Status func(text string)
}

// ErrNoNotifier is returned by Run for a notify check on a target that
// has no notify socket (a runtime other than hooks).
var ErrNoNotifier = errors.New("the replica's runtime has no notify socket")

// runNotify follows the replica's own messages (api.NotifyCheck):
//
//   - READY=1 makes it healthy. Before it, only the start period counts:
//     no READY=1 within it (when it is > 0) is unhealthy; 0 waits as long
//     as the replica runs. WATCHDOG=1 before READY=1 changes nothing.
//   - After READY=1, each interval that passes without a message (READY=1
//     or WATCHDOG=1) is a failed check, and retries of them in a row are
//     unhealthy: the replica went silent for interval × retries.
//   - WATCHDOG=trigger is unhealthy at once; timeout is not used.
func runNotify(ctx context.Context, hc *api.HealthCheck, n exec.Notifier, w Watch) error {
	p := ParamsOf(hc)
	ctx, cancel := context.WithCancel(ctx)
	msgs, err := n.Notifications(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("%w: notify check: %w", ErrUnhealthy, err)
	}
	defer func() {
		// The reader ends with ctx; wait for it, so nothing outlives Run.
		cancel()
		for range msgs {
		}
	}()

	var startEnds <-chan time.Time
	if p.StartPeriod > 0 {
		t := time.NewTimer(p.StartPeriod)
		defer t.Stop()
		startEnds = t.C
	}
	silence := time.NewTimer(time.Hour)
	silence.Stop()
	defer silence.Stop()
	silentFor := time.Duration(p.Retries) * p.Interval
	ready := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-startEnds:
			return fmt.Errorf("%w: no READY=1 within the start period (%v)", ErrUnhealthy, p.StartPeriod)
		case <-silence.C:
			return fmt.Errorf("%w: no WATCHDOG=1 for %v (%d checks of %v in a row)", ErrUnhealthy, silentFor, p.Retries, p.Interval)
		case m, ok := <-msgs:
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("%w: the notify socket closed", ErrUnhealthy)
			}
			if m.Status != "" && w.Status != nil {
				w.Status(m.Status)
			}
			if m.WatchdogTrigger {
				return fmt.Errorf("%w: the replica sent WATCHDOG=trigger", ErrUnhealthy)
			}
			if m.Ready && !ready {
				ready, startEnds = true, nil
				if w.Healthy != nil {
					w.Healthy()
				}
			}
			if ready && (m.Ready || m.Watchdog) {
				silence.Reset(silentFor)
			}
		}
	}
}
