package pace

import (
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/testclock"
)

// The first change, and any after a quiet window, waits for nothing;
// changes within a window of the last action wait for what is left of it.
func TestDelay(t *testing.T) {
	clock := testclock.New(time.Unix(1000, 0))
	p := New(50*time.Millisecond, WithClock(clock.Now))
	check := func(when string, want time.Duration) {
		t.Helper()
		if got := p.Delay(); got != want {
			t.Errorf("%s: Delay() = %v, want %v", when, got, want)
		}
	}
	check("never acted", 0)
	p.Acted()
	check("just acted", 50*time.Millisecond)
	clock.Advance(20 * time.Millisecond)
	check("20ms after acting", 30*time.Millisecond)
	clock.Advance(30 * time.Millisecond)
	check("a window after acting", 0)
	clock.Advance(time.Hour)
	check("long quiet", 0)
	p.Acted()
	clock.Advance(49 * time.Millisecond)
	check("49ms after acting again", time.Millisecond)
}

// A window of 0 never delays: the loop acts on every change.
func TestZeroWindow(t *testing.T) {
	p := New(0)
	p.Acted()
	if d := p.Delay(); d != 0 {
		t.Errorf("Delay() with no window = %v", d)
	}
}
