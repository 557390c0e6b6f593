package orchestrator

import (
	"sync"

	"github.com/jaco-project/jaco/manager/state/store"
)

// intake takes the store's events in as a watch filter that keeps none of
// them: on the store's broadcaster goroutine it notes what an event asks
// for and kicks the loop. A watch that forwarded the events would clone
// each one and hand them over one at a time, and a loop that passes after
// taking what is waiting would, behind a burst of 100 000 task writes,
// run about one pass per write, each reading every task of the service.
// Here a burst of any size becomes one pass, and no event is cloned.
type intake struct {
	// notes is false for an intake that only kicks.
	notes bool
	kick  chan struct{}
	mu    sync.Mutex
	// pending is what was noted since the last take.
	pending *dirty
}

func newIntake(notes bool) *intake {
	return &intake{notes: notes, kick: make(chan struct{}, 1), pending: noMarks()}
}

// noMarks is a dirty that marks nothing.
func noMarks() *dirty {
	d := newDirty()
	d.everyone = false
	return d
}

// filter is the watch filter. It runs on objects shared with the store
// and only reads them. A reset still reaches the watch's channel, as the
// store passes resets whatever the filters say.
func (in *intake) filter(e store.Event) bool {
	if in.notes {
		in.mu.Lock()
		in.pending.note(e)
		in.mu.Unlock()
	}
	select {
	case in.kick <- struct{}{}:
	default:
	}
	return false
}

// take moves what was noted into d.
func (in *intake) take(d *dirty) {
	in.mu.Lock()
	defer in.mu.Unlock()
	d.merge(in.pending)
	in.pending = noMarks()
}
