// Package testclock is a settable clock for tests: time stands still until
// the test advances it, so deadlines and backoffs can be stepped through
// without sleeping. A Clock is safe for concurrent use, so the code under
// test may read it from its own goroutines while the test advances it.
package testclock

import (
	"sync"
	"time"
)

// Clock reads a time that only Advance changes.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock reading start.
func New(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (back, if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
