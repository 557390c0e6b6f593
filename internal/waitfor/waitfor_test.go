package waitfor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the
// test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, time.Second, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
	r := &recorder{TB: t}
	Eventually(r, 10*time.Millisecond, func() error { return errors.New("never") })
	if !strings.Contains(r.failed, "never") {
		t.Fatalf("failure %q, want the condition's last error", r.failed)
	}
}

func TestHolds(t *testing.T) {
	calls := 0
	Holds(t, time.Second, "three calls", func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprint(calls, " calls")
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
	r := &recorder{TB: t}
	n := 0
	Holds(r, 10*time.Millisecond, "the impossible", func() (bool, string) {
		n++
		return false, fmt.Sprint("try ", n)
	})
	if want := fmt.Sprintf("waiting for the impossible; last seen: try %d", n); !strings.Contains(r.failed, want) {
		t.Fatalf("failure %q, want it to name what was waited for and %q", r.failed, want)
	}
}

func TestUntil(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := Until(ctx, time.Second, time.Millisecond, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("a call's context has no deadline")
		}
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Until = %v after %d calls, want nil after 3", err, calls)
	}

	never := errors.New("never")
	err = Until(ctx, 20*time.Millisecond, time.Millisecond, func(context.Context) error { return never })
	if !errors.Is(err, never) || !strings.Contains(err.Error(), "not within 20ms") {
		t.Fatalf("Until past its timeout = %v, want the condition's last error, not within 20ms", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	err = Until(cctx, time.Minute, time.Millisecond, func(context.Context) error { cancel(); return never })
	if !errors.Is(err, never) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Until with its context ended = %v, want the condition's last error and context.Canceled", err)
	}
}
