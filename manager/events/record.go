package events

import (
	"context"

	"github.com/jaco-project/jaco/manager/state/store"
)

// Recorder feeds a Log with the changes a store applies, from the moment
// it starts until Stop.
type Recorder struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Record starts recording st's changes into log. Changes of entries up to
// replayedThrough are not recorded: a restarted manager applies its log
// again at open, and stamping those old changes with the time it replays
// them would report them as new. (Its history begins when it started.)
//
// The changes are taken in by the watch's filter, as the orchestrator's
// intake does (ADR 0031): converted on the store's broadcaster goroutine
// from the stored objects, which FromStore only reads, so no object is
// cloned for the log. A reset is the one event the store hands over
// whatever the filter says; it arrives on the watch's channel, so it may
// be logged after the events of entries applied right after the
// snapshot (its index says where it belongs).
func Record(st *store.Store, log *Log, replayedThrough uint64) *Recorder {
	ctx, cancel := context.WithCancel(context.Background())
	take := func(e store.Event) bool {
		if e.Index > replayedThrough {
			if ev := FromStore(e, log.Now()); ev != nil {
				log.Append(ev)
			}
		}
		return false
	}
	resets := st.Watch(ctx, take)
	r := &Recorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for e := range resets { // closed when ctx ends or the store closes
			if e.Kind == store.EventReset && e.Index > replayedThrough {
				log.Append(FromStore(e, log.Now()))
			}
		}
	}()
	return r
}

// Stop stops recording and returns once the recorder's goroutine is done.
func (r *Recorder) Stop() {
	r.cancel()
	<-r.done
}
