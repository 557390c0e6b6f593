package dispatcher

import (
	"slices"
	"strings"

	"github.com/jaco-project/jaco/api"
)

// assigned reports whether the agent of nodeID must know of t: placed on
// the node and accepted by the scheduler (ASSIGNED or later), and either
// still wanted running or not yet stopped. A replica desired SHUTDOWN that
// still runs stays, so the agent stops it.
func assigned(nodeID string, t *api.Task) bool {
	if t == nil || t.NodeId != nodeID {
		return false
	}
	state := t.GetStatus().GetState()
	return state >= api.TaskState_TASK_STATE_ASSIGNED &&
		(t.DesiredState < api.TaskState_TASK_STATE_COMPLETE || state < api.TaskState_TASK_STATE_COMPLETE)
}

// fingerprint is what the agent acts on. A change of anything else (the
// status the agent itself reported, above all) is not sent, so reports do
// not echo back.
type fingerprint struct {
	desired     api.TaskState
	specVersion uint64
	notBefore   int64 // unix nanoseconds; 0 when unset
}

func fingerprintOf(t *api.Task) fingerprint {
	fp := fingerprint{desired: t.DesiredState, specVersion: t.SpecVersion}
	if t.NotBefore != nil {
		fp.notBefore = t.NotBefore.AsTime().UnixNano()
	}
	return fp
}

// assignmentSet is what one node's agent has been told, and the changes
// seen since. It is pure: the Assignments stream feeds it tasks and sends
// what it returns.
type assignmentSet struct {
	nodeID string
	known  map[string]fingerprint
	// pending holds the latest version of each task changed since the
	// last message; nil for a deleted task.
	pending map[string]*api.Task
}

func newAssignmentSet(nodeID string) *assignmentSet {
	return &assignmentSet{nodeID: nodeID, known: map[string]fingerprint{}, pending: map[string]*api.Task{}}
}

// complete starts over from tasks (every task of the node) and returns the
// ones to send in a COMPLETE message, by id.
func (a *assignmentSet) complete(tasks []*api.Task) []*api.Task {
	a.known = map[string]fingerprint{}
	a.pending = map[string]*api.Task{}
	var out []*api.Task
	for _, t := range tasks {
		if assigned(a.nodeID, t) {
			a.known[t.Id] = fingerprintOf(t)
			out = append(out, t)
		}
	}
	slices.SortFunc(out, byID)
	return out
}

// observe records a task's new content; deleted is true when it is gone.
func (a *assignmentSet) observe(t *api.Task, deleted bool) {
	if deleted {
		a.pending[t.Id] = nil
		return
	}
	a.pending[t.Id] = t
}

// changes returns what to send since the last call: tasks new to the agent
// or changed in what it acts on, and ids of tasks it must drop. Both empty
// means nothing to send.
func (a *assignmentSet) changes() (updated []*api.Task, removed []string) {
	for id, t := range a.pending {
		old, had := a.known[id]
		switch {
		case assigned(a.nodeID, t):
			fp := fingerprintOf(t)
			if !had || old != fp {
				a.known[id] = fp
				updated = append(updated, t)
			}
		case had:
			delete(a.known, id)
			removed = append(removed, id)
		}
	}
	a.pending = map[string]*api.Task{}
	slices.SortFunc(updated, byID)
	slices.Sort(removed)
	return updated, removed
}

func byID(a, b *api.Task) int { return strings.Compare(a.Id, b.Id) }
