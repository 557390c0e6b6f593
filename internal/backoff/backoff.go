// Package backoff is how a node waits between failed attempts to reach a
// manager: exponential, capped, with jitter so that nodes cut off together
// do not come back together.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is the wait after failures failed attempts in a row: from lo,
// doubling with each failure, capped at hi, of which up to half is
// random.
func Delay(lo, hi time.Duration, failures int) time.Duration {
	d := lo << min(failures, 20)
	if d <= 0 || d > hi {
		d = hi
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d, and returns false when ctx ends first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
