package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jaco-project/jaco/api"
)

// Statuses holds the replica statuses not yet accepted by a dispatcher,
// for Sessions to report. It lives as long as the node, not a session:
// what one session failed to deliver the next one sends. A replica's
// changes coalesce; only its latest status is sent.
type Statuses struct {
	mu sync.Mutex
	// pending maps a task id to the status to send for it.
	pending map[string]*api.TaskStatus
	// notify wakes the sender of the current session (capacity 1).
	notify chan struct{}
	// urgent cuts the sender's wait between batches short (capacity 1).
	urgent chan struct{}
}

// NewStatuses returns an empty Statuses.
func NewStatuses() *Statuses {
	return &Statuses{pending: map[string]*api.TaskStatus{},
		notify: make(chan struct{}, 1), urgent: make(chan struct{}, 1)}
}

// Enqueue makes st the status to send for task id. A replica running or
// ended is what a caller waits for (service create, an update's next
// step, a restart): it goes at once, not after the interval that paces
// the steps before it.
func (r *Statuses) Enqueue(id string, st *api.TaskStatus) {
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

// Drop forgets what is pending for id (the replica is removed).
func (r *Statuses) Drop(id string) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// Pending reports whether a status for task id waits to be accepted.
func (r *Statuses) Pending(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[id] != nil
}

func (r *Statuses) wake() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// batch returns what is pending, ordered by task id.
func (r *Statuses) batch() []*api.TaskStatusUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	updates := make([]*api.TaskStatusUpdate, 0, len(r.pending))
	for id, st := range r.pending {
		updates = append(updates, &api.TaskStatusUpdate{TaskId: id, Status: st})
	}
	slices.SortFunc(updates, func(a, b *api.TaskStatusUpdate) int { return strings.Compare(a.TaskId, b.TaskId) })
	return updates
}

// accepted forgets the sent statuses that have not been replaced since.
func (r *Statuses) accepted(sent []*api.TaskStatusUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range sent {
		if r.pending[u.TaskId] == u.Status {
			delete(r.pending, u.TaskId)
		}
	}
}

// run sends pending statuses with send until ctx ends or send fails (the
// session is broken; its error is returned). It sends at once when woken
// and at most once per interval, unless a replica ran or ended since the
// last send: that goes at once. Under load a send in flight is what
// batches: what comes meanwhile goes in the next one.
func (r *Statuses) run(ctx context.Context, interval time.Duration, send func(context.Context, []*api.TaskStatusUpdate) error) error {
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
