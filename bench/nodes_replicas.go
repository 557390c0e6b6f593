package main

import (
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/agent"
	"github.com/jaco-project/jaco/api"
)

// simReplicas is what a simulated node runs: the state it holds for each
// of its replicas, and the statuses the dispatcher has not accepted yet
// (the agent's, living as long as the node, not a session: what one
// session failed to send the next one sends).
type simReplicas struct {
	mu       sync.Mutex
	state    map[string]api.TaskState
	statuses *agent.Statuses
}

func newSimReplicas() *simReplicas {
	return &simReplicas{state: map[string]api.TaskState{}, statuses: agent.NewStatuses()}
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
		r.statuses.Drop(id)
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
			r.statuses.Enqueue(id, simStatus(want))
		case known && told < cur && !r.statuses.Pending(id):
			// The cluster is behind what the node reported: say it again.
			r.statuses.Enqueue(id, simStatus(cur))
		}
		r.state[id] = cur
	}
	for _, id := range m.GetRemoved() {
		forget(id)
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
