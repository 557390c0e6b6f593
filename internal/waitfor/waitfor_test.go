package waitfor

import (
	"errors"
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
	r.failed = format
	if len(args) > 1 {
		r.failed = args[1].(error).Error()
	}
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
