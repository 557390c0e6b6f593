package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrFailedToStop wraps the error of a stop ladder that had to SIGKILL the
// replica: it ignored its stop signal and SIGQUIT through both grace
// periods.
var ErrFailedToStop = errors.New("replica failed to stop in time")

// ErrStillRunning wraps (with ErrFailedToStop) the error of a ladder
// whose SIGKILL did not end the replica within the kill wait.
var ErrStillRunning = errors.New("still running after SIGKILL")

// Stoppable is one replica's processes, as the stop ladder drives them.
type Stoppable interface {
	// Signal sends sig; done reports that nothing was left to reach.
	Signal(ctx context.Context, sig syscall.Signal) (done bool, err error)
	// WaitGone waits up to d for the replica to end and reports whether
	// it did; it returns early with ctx's error.
	WaitGone(ctx context.Context, d time.Duration) (bool, error)
}

// Ladder is the stop ladder of docs/design.md §9 for one replica.
type Ladder struct {
	// StopSignal is the first signal (the spec's stop_signal); 0 is
	// SIGINT.
	StopSignal            syscall.Signal
	StopGrace, AbortGrace time.Duration
	// KillWait bounds the wait for the end after SIGKILL (a process in
	// uninterruptible sleep may take a while).
	KillWait time.Duration
	Log      *slog.Logger
}

// Run sends the stop signal and waits up to StopGrace, then SIGQUIT and up to
// AbortGrace, then SIGKILL and up to KillWait. It returns nil when the
// replica ended before SIGKILL, an error wrapping ErrFailedToStop when it
// took SIGKILL (and ErrStillRunning too when even that did not end it in
// time), or ctx's error.
func (l Ladder) Run(ctx context.Context, s Stoppable) error {
	first := l.StopSignal
	if first == 0 {
		first = syscall.SIGINT
	}
	for _, r := range []struct {
		sig   syscall.Signal
		grace time.Duration
	}{{first, l.StopGrace}, {syscall.SIGQUIT, l.AbortGrace}} {
		l.Log.InfoContext(ctx, "stopping replica", "signal", SignalName(r.sig), "grace", r.grace)
		if done, err := l.step(ctx, s, r.sig, r.grace); err != nil || done {
			return err
		}
	}
	// WARN: the stop policy at work on a replica that ignored its signals,
	// not a fault of the node.
	l.Log.WarnContext(ctx, "replica did not stop in time; killing it", "signal", "SIGKILL",
		"stop_grace_period", l.StopGrace, "abort_grace_period", l.AbortGrace)
	done, err := l.step(ctx, s, syscall.SIGKILL, l.KillWait)
	if err != nil {
		return err
	}
	if !done {
		return fmt.Errorf("%w: %w %s", ErrFailedToStop, ErrStillRunning, l.KillWait)
	}
	return fmt.Errorf("%w: ignored %s for %s and SIGQUIT for %s, killed with SIGKILL",
		ErrFailedToStop, SignalName(first), l.StopGrace, l.AbortGrace)
}

func (l Ladder) step(ctx context.Context, s Stoppable, sig syscall.Signal, grace time.Duration) (bool, error) {
	done, err := s.Signal(ctx, sig)
	if err != nil {
		return false, fmt.Errorf("stop: send %s: %w", SignalName(sig), err)
	}
	if done {
		return true, nil
	}
	return s.WaitGone(ctx, grace)
}

// SignalName is "SIGINT" for syscall.SIGINT and so on.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("SIG%d", int(sig))
}
