package agent

import (
	"context"
	"sync"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/statusq"
)

// reporter holds the replica statuses not yet accepted by a dispatcher.
// It lives as long as the agent, not a session: what one session failed
// to deliver the next one sends. A replica's changes coalesce; only its
// latest status is sent.
type reporter struct {
	mu      sync.Mutex
	pending statusq.Pending
	// notify wakes the sender of the current session (capacity 1).
	notify chan struct{}
	// urgent cuts the sender's wait between batches short (capacity 1).
	urgent chan struct{}
}

func newReporter() *reporter {
	return &reporter{pending: statusq.Pending{},
		notify: make(chan struct{}, 1), urgent: make(chan struct{}, 1)}
}

// enqueue makes st the status to send for task id. A replica running or
// ended is what a caller waits for (service create, an update's next
// step, a restart): it goes at once, not after the interval that paces
// the steps before it.
func (r *reporter) enqueue(id string, st *api.TaskStatus) {
	r.mu.Lock()
	r.pending[id] = st
	r.mu.Unlock()
	r.wake()
	if st.GetState() >= api.TaskState_TASK_STATE_RUNNING {
		select {
		case r.urgent <- struct{}{}:
		default:
		}
	}
}

// drop forgets what is pending for id (the replica is removed).
func (r *reporter) drop(id string) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

func (r *reporter) wake() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// batch returns what is pending, ordered by task id.
func (r *reporter) batch() []*api.TaskStatusUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending.Batch()
}

// accepted forgets the sent statuses that have not been replaced since.
func (r *reporter) accepted(sent []*api.TaskStatusUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending.Accepted(sent)
}

// run sends pending statuses with send until ctx ends or send fails (the
// session is broken; its error is returned). It sends at once when woken
// and at most once per interval, unless a replica ran or ended since the
// last send: that goes at once. Under load a send in flight is what
// batches: what comes meanwhile goes in the next one.
func (r *reporter) run(ctx context.Context, interval time.Duration, send func(context.Context, []*api.TaskStatusUpdate) error) error {
	// What an earlier session left goes out first.
	r.wake()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.notify:
		}
		if updates := r.batch(); len(updates) > 0 {
			if err := send(ctx, updates); err != nil {
				// Keep the wake-up so the next session sends at once.
				r.wake()
				return err
			}
			r.accepted(updates)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		case <-r.urgent:
		}
	}
}
