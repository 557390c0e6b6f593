package node

import (
	"context"
	"time"

	"github.com/jaco-project/jaco/manager/state/store"
)

// loop runs a node-side reconciler: step every interval, when kick fires,
// and when the store events of wake arrive (a nil wake never does; a
// closed one ends the loop), until ctx ends. A failure is logged with failMsg once, until the
// error changes or a step succeeds; the next round retries.
type loop struct {
	interval time.Duration
	kick     <-chan struct{}
	wake     <-chan store.Event
	failMsg  string
	step     func(context.Context) error
}

func (n *Node) runLoop(ctx context.Context, l loop) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-l.wake:
			if !ok {
				return
			}
		case <-t.C:
		case <-l.kick:
		}
		err := l.step(ctx)
		switch {
		case err == nil:
			lastErr = ""
		case ctx.Err() != nil:
			return
		case err.Error() != lastErr:
			lastErr = err.Error()
			n.log.Warn(l.failMsg, "err", err)
		}
	}
}

// kick asks a loop for a round now; one already asked for is enough.
func kick(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
