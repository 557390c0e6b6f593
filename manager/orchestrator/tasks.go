package orchestrator

import (
	"cmp"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/rollout"
)

// newTask returns a pending task of svc in slot on nodeID (global tasks)
// or on no node yet (replicated ones). A non-nil notBefore marks a restart
// attempt.
func newTask(svc *api.Service, slot uint64, nodeID string, now time.Time, notBefore *time.Time) (*api.Task, error) {
	id, err := identity.NewID()
	if err != nil {
		return nil, err
	}
	t := &api.Task{
		Id:           id,
		ServiceId:    svc.GetId(),
		ServiceName:  svc.GetSpec().GetName(),
		Slot:         slot,
		NodeId:       nodeID,
		DesiredState: api.TaskState_TASK_STATE_RUNNING,
		Status: &api.TaskStatus{
			State:     api.TaskState_TASK_STATE_PENDING,
			Timestamp: timestamppb.New(now),
		},
		// svc's own spec: the store copies what it is given, and nothing
		// here changes a spec in place. A copy per task cost about a tenth
		// of the creation rate of a big service (BenchmarkCreate).
		Spec:        svc.GetSpec(),
		SpecVersion: svc.GetSpecVersion(),
	}
	if notBefore != nil {
		t.NotBefore = timestamppb.New(*notBefore)
	}
	if api.IsJob(svc.GetSpec().GetMode()) {
		t.JobIteration = jobIteration(svc)
	}
	return t, nil
}

func state(t *api.Task) api.TaskState { return t.GetStatus().GetState() }

// terminal: the replica has stopped for good.
func terminal(s api.TaskState) bool { return s >= api.TaskState_TASK_STATE_COMPLETE }

// live: the task should run and has not ended.
func live(t *api.Task) bool {
	return t.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING && !terminal(state(t))
}

// ended: the task should run but has stopped; the restart supervisor has
// not decided about it yet.
func ended(t *api.Task) bool {
	return t.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING && terminal(state(t))
}

// finished: the task ended and its restart policy forbade another attempt;
// it still occupies its slot.
func finished(t *api.Task) bool {
	return t.GetDesiredState() == api.TaskState_TASK_STATE_COMPLETE
}

// occupant: the task holds its slot (or its node, for global services).
func occupant(t *api.Task) bool { return live(t) || ended(t) || finished(t) }

// neverAssigned: no agent can have heard of the task yet.
func neverAssigned(t *api.Task) bool { return state(t) <= api.TaskState_TASK_STATE_PENDING }

// started: the replica has reached RUNNING (or gone past it).
func started(t *api.Task) bool { return state(t) >= api.TaskState_TASK_STATE_RUNNING }

// restartAttempt: the task was created by the restart supervisor.
func restartAttempt(t *api.Task) bool { return t.GetNotBefore() != nil }

// byAge sorts tasks oldest first (creation time, then id).
func byAge(tasks []*api.Task) {
	slices.SortFunc(tasks, func(a, b *api.Task) int {
		if c := a.GetMeta().GetCreatedAt().AsTime().Compare(b.GetMeta().GetCreatedAt().AsTime()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetId(), b.GetId())
	})
}

// shutdown sets t's desired state to SHUTDOWN; it reports whether that
// changed anything.
func shutdown(t *api.Task) bool {
	if t.DesiredState == api.TaskState_TASK_STATE_SHUTDOWN {
		return false
	}
	t.DesiredState = api.TaskState_TASK_STATE_SHUTDOWN
	return true
}

// outdated: t runs a spec older than svc's in a way that matters to the
// replica. A change of the replica count or of the update policies alone
// bumps no spec_version, but a rollback to the spec t runs does: t stays.
func outdated(svc *api.Service, t *api.Task) bool {
	return t.GetSpecVersion() < svc.GetSpecVersion() && rollout.Replaces(svc.GetSpec(), t.GetSpec())
}
