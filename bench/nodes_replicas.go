package main

import (
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/statusq"
)

// simReplicas is what a simulated node runs: the state it holds for each
// of its replicas, and the statuses the dispatcher has not accepted yet.
// It lives as long as the node, not a session: what one session failed to
// send the next one sends (agent/reporter.go).
type simReplicas struct {
	mu      sync.Mutex
	state   map[string]api.TaskState
	pending statusq.Pending
	// wake is signalled when something is pending (capacity 1).
	wake chan struct{}
}

func newSimReplicas() *simReplicas {
	return &simReplicas{state: map[string]api.TaskState{}, pending: statusq.Pending{},
		wake: make(chan struct{}, 1)}
}

func (r *simReplicas) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// apply carries out an assignments message as the agent would with a
// runtime that starts and stops at once: a replica to run is reported
// RUNNING, one to stop SHUTDOWN; a replica the message (a COMPLETE set)
// no longer holds, or removes, is forgotten. It returns by how much the
// replicas running on the node changed.
func (r *simReplicas) apply(m *api.AssignmentsMessage) (running int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	forget := func(id string) {
		if r.state[id] == api.TaskState_TASK_STATE_RUNNING {
			running--
		}
		delete(r.state, id)
		delete(r.pending, id)
	}
	if m.GetType() == api.AssignmentsMessage_TYPE_COMPLETE {
		keep := make(map[string]bool, len(m.GetUpdated()))
		for _, t := range m.GetUpdated() {
			keep[t.GetId()] = true
		}
		for id := range r.state {
			if !keep[id] {
				forget(id)
			}
		}
	}
	queued := false
	for _, t := range m.GetUpdated() {
		id, told := t.GetId(), t.GetStatus().GetState()
		cur, known := r.state[id]
		if !known {
			// A replica new to the node starts from the status the
			// cluster knows: one seen running is adopted.
			cur = told
			if cur == api.TaskState_TASK_STATE_RUNNING {
				running++
			}
		}
		want := api.TaskState_TASK_STATE_RUNNING
		if t.GetDesiredState() > api.TaskState_TASK_STATE_RUNNING {
			want = api.TaskState_TASK_STATE_SHUTDOWN
		}
		switch {
		case cur < want && cur < api.TaskState_TASK_STATE_COMPLETE:
			if cur == api.TaskState_TASK_STATE_RUNNING {
				running--
			}
			if want == api.TaskState_TASK_STATE_RUNNING {
				running++
			}
			cur = want
			r.pending[id] = simStatus(want)
			queued = true
		case known && told < cur && r.pending[id] == nil:
			// The cluster is behind what the node reported: say it again.
			r.pending[id] = simStatus(cur)
			queued = true
		}
		r.state[id] = cur
	}
	for _, id := range m.GetRemoved() {
		forget(id)
	}
	if queued {
		r.poke()
	}
	return running
}

func simStatus(s api.TaskState) *api.TaskStatus {
	msg := "started"
	if s == api.TaskState_TASK_STATE_SHUTDOWN {
		msg = "shut down"
	}
	return &api.TaskStatus{State: s, Message: msg, Timestamp: timestamppb.New(time.Now())}
}

// batch returns what is pending, ordered by task id.
func (r *simReplicas) batch() []*api.TaskStatusUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending.Batch()
}

// accepted forgets the sent statuses not replaced since.
func (r *simReplicas) accepted(sent []*api.TaskStatusUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending.Accepted(sent)
}
