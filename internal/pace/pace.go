// Package pace decides when a batching loop acts: at once after a quiet
// spell, otherwise one window after its previous action. A loop that
// waited a fixed window after every first change (as the scheduler, the
// dispatcher and the agent did) adds that window to every change on an
// idle cluster, where there is nothing to batch; one that never waits
// makes a proposal per change under load. A Pacer gives the first change
// after a quiet spell no delay and still lets a loop act at most once per
// window while changes keep coming: what arrives meanwhile is batched.
package pace

import "time"

// Pacer tracks when its loop last acted. It is not safe for concurrent
// use: it belongs to the one goroutine that runs the loop.
type Pacer struct {
	window time.Duration
	now    func() time.Time
	last   time.Time // zero: the loop has not acted yet
}

// Option configures a Pacer.
type Option func(*Pacer)

// WithClock makes the Pacer read now instead of time.Now (tests).
func WithClock(now func() time.Time) Option { return func(p *Pacer) { p.now = now } }

// New returns a Pacer whose loop acts at most once per window.
func New(window time.Duration, opts ...Option) *Pacer {
	p := &Pacer{window: window, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Delay is how long the loop waits, from now, before acting on a change:
// 0 when it last acted a window or more ago (or never), else what is left
// of the window.
func (p *Pacer) Delay() time.Duration {
	if p.last.IsZero() {
		return 0
	}
	return max(p.window-p.now().Sub(p.last), 0)
}

// Acted records that the loop acted now; the next window starts here.
func (p *Pacer) Acted() { p.last = p.now() }
