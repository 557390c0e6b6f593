package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/syncbuf"
)

// TestFailureLoggedOnceUntilItChanges: kicked rounds that fail alike log
// one line; a success, then the same failure, logs it again; a new
// failure logs at once.
func TestFailureLoggedOnceUntilItChanges(t *testing.T) {
	var logs syncbuf.Buffer
	steps := make(chan error)
	done := make(chan struct{})
	kick := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		Loop{Interval: time.Hour, Kick: kick, FailMsg: "check failed",
			Step:   func(context.Context) error { return <-steps },
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}.Run(ctx)
	}()
	round := func(err error) {
		Kick(kick)
		steps <- err
	}
	a, b := errors.New("a"), errors.New("b")
	for _, err := range []error{a, a, a, nil, a, b, b} {
		round(err)
	}
	Kick(kick) // a last round, to know the one before was logged
	steps <- b
	cancel()
	<-done
	if got := strings.Count(logs.String(), "check failed"); got != 3 {
		t.Fatalf("logged %d failures, want 3 (a; a after a success; b):\n%s", got, logs.String())
	}
}

// TestClosedWakeEnds: the loop ends when its wake channel closes (the
// manager it watched stopped), with ctx still live.
func TestClosedWakeEnds(t *testing.T) {
	wake := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop{Interval: time.Hour, Wake: wake, Step: func(context.Context) error { return nil }}.Run(context.Background())
	}()
	wake <- struct{}{}
	close(wake)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop goes on after its wake channel closed")
	}
}

// TestKickCoalesces: a kick already pending is enough; Kick never blocks.
func TestKickCoalesces(t *testing.T) {
	c := make(chan struct{}, 1)
	Kick(c)
	Kick(c)
	if len(c) != 1 {
		t.Fatalf("%d kicks pending, want 1", len(c))
	}
}
