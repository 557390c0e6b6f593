// Package waitfor is how code waits on a condition: tried again and again
// until it holds or a deadline passes, ending with what the condition
// last said. A test fails with it (Eventually, Holds); the chaos runner
// and jaco-bench, which wait on the processes and clusters they drive,
// get it back as an error (Until).
package waitfor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// TB is the part of testing.TB a test's wait uses. It is not testing.TB
// so that code outside tests that waits with Until (the chaos runner,
// jaco-bench) does not link the testing package for it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// A test's condition is tried again after firstPoll, then after twice as
// long each time up to poll: one that holds within milliseconds is seen
// within milliseconds, one that takes seconds is not tried more than 20
// times a second.
const (
	firstPoll = time.Millisecond
	poll      = 50 * time.Millisecond
)

// Eventually calls cond until it returns nil or timeout passes, then
// fails t with the last error cond returned.
func Eventually(t TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := retry(timeout, cond); err != nil {
		t.Fatalf("condition not met within %v; last: %v", timeout, err)
	}
}

// errNotYet is a condition of Holds that does not hold yet.
var errNotYet = errors.New("not yet")

// Holds calls cond until it reports true or timeout passes, then fails t
// naming what was waited for and what cond last reported seeing.
func Holds(t TB, timeout time.Duration, what string, cond func() (ok bool, seen string)) {
	t.Helper()
	var seen string
	err := retry(timeout, func() error {
		ok, s := cond()
		if ok {
			return nil
		}
		seen = s
		return errNotYet
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s; last seen: %s", timeout, what, seen)
	}
}

// retry calls cond until it returns nil or timeout passes; it returns
// cond's last error then.
func retry(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	pause := firstPoll
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, poll)
	}
}

// attemptLimit bounds one call of an Until condition. Until waits on
// things out of process (a daemon, a cluster): a call stuck on one that
// does not answer must leave the wait time for the next call.
const attemptLimit = 2 * time.Second

// Until calls cond every interval until it returns nil, and then returns
// nil. Once timeout has passed it returns an error wrapping cond's last;
// once ctx ends, ctx's error joined with cond's last. Each call of cond
// gets a context that ends at the wait's deadline, or attemptLimit after
// the call began if that is sooner.
func Until(ctx context.Context, timeout, interval time.Duration, cond func(ctx context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(wctx, attemptLimit)
		err := cond(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return errors.Join(ctx.Err(), err)
			}
			return fmt.Errorf("not within %s: %w", timeout, err)
		case <-time.After(interval):
		}
	}
}
