// Package reconcile runs the daemon's node-side reconcilers (the role and
// certificate check, the address check, autolock): each brings something
// of this node in line with the cluster in rounds, and one round's failure
// is retried by the next.
//
// It is below package node and the packages split from it, and knows
// neither: a reconciler is a step function and the channels that call
// for a round.
package reconcile

import (
	"context"
	"log/slog"
	"time"
)

// Loop runs Step every Interval, when Kick fires, and when Wake delivers
// (a nil Wake never does; a closed one ends the loop), until ctx ends.
//
// A failure is logged with FailMsg once, until the error changes or a
// step succeeds: a check that fails every 2 s while a manager is away
// would otherwise fill the log with one line.
type Loop struct {
	Interval time.Duration
	Kick     <-chan struct{}
	Wake     <-chan struct{}
	FailMsg  string
	Step     func(context.Context) error
	Logger   *slog.Logger
}

// Run runs the loop in the calling goroutine until ctx ends or Wake is
// closed. The first round is at the first tick or kick.
func (l Loop) Run(ctx context.Context) {
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-l.Wake:
			if !ok {
				return
			}
		case <-t.C:
		case <-l.Kick:
		}
		err := l.Step(ctx)
		switch {
		case err == nil:
			lastErr = ""
		case ctx.Err() != nil:
			return
		case err.Error() != lastErr:
			lastErr = err.Error()
			log.Warn(l.FailMsg, "err", err)
		}
	}
}

// Kick asks a loop for a round now; one already asked for is enough. c
// must have a buffer of one.
func Kick(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
