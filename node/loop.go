package node

import (
	"context"
	"time"

	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/node/internal/reconcile"
)

// loop is a node-side reconciler run by reconcile.Loop (see there):
// step every interval, when kick fires, and when the store events of
// wake arrive, until ctx ends.
type loop struct {
	interval time.Duration
	kick     <-chan struct{}
	wake     <-chan store.Event
	failMsg  string
	step     func(context.Context) error
}

func (n *Node) runLoop(ctx context.Context, l loop) {
	reconcile.Loop[store.Event]{Interval: l.interval, Kick: l.kick, Wake: l.wake,
		FailMsg: l.failMsg, Step: l.step, Logger: n.log}.Run(ctx)
}

// kick asks a loop for a round now; one already asked for is enough.
func kick(c chan<- struct{}) { reconcile.Kick(c) }
