package orchestrator

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
)

// The update machine (docs/design.md §8). The Control API starts an
// update (state UPDATING, or ROLLBACK_STARTED) when it bumps a service's
// spec_version; from then on each pass decides from the store alone, so a
// new leader goes on from the recorded state and from which slots already
// run the new spec, never from the start:
//
//   - A replica of the new spec that ends on its own before it has run for
//     the policy's monitor period is marked unstable (markUnstable): a
//     failure of the update.
//   - More failures than max_failure_ratio of the service's slots allow
//     take the policy's failure action: pause (PAUSED or ROLLBACK_PAUSED,
//     naming the replica and its reason), continue, or roll back (the
//     spec returns to previous_spec under the rollback policy).
//   - Once every slot runs the new spec and has been stable for the
//     monitor period, the update is COMPLETED (ROLLBACK_COMPLETED).
//   - roll replaces slots while the update is not paused, parallelism at a
//     time: a slot stays in flight until its new replica is stable, and
//     the next starts delay after the last one became stable.

// stable: t has run for the monitor period. A replica recorded RUNNING
// before running_since existed counts as stable.
func (p *pass) stable(t *api.Task, pol rollout.Policy) bool {
	if !live(t) || !started(t) {
		return false
	}
	since := t.GetRunningSince()
	return since == nil || !p.now.Before(since.AsTime().Add(pol.Monitor))
}

// stableAt is when t, running, becomes stable.
func stableAt(t *api.Task, pol rollout.Policy) time.Time {
	return t.GetRunningSince().AsTime().Add(pol.Monitor)
}

// markUnstable marks t, which ended while it should run, unstable when it
// ran for less than the monitor period of the policy in force. A replica
// stopped for it (SHUTDOWN), lost with its node (ORPHANED), or that
// completed under a restart policy that lets it stay complete, is no
// failure.
func (p *pass) markUnstable(svc *api.Service, t *api.Task) error {
	// A job is not rolled out (docs/adr/0060-jobs.md): no update to fail.
	if !ended(t) || t.GetUnstable() || api.IsJob(svc.GetSpec().GetMode()) {
		return nil
	}
	switch state(t) {
	case api.TaskState_TASK_STATE_SHUTDOWN, api.TaskState_TASK_STATE_ORPHANED:
		return nil
	case api.TaskState_TASK_STATE_COMPLETE:
		if c := svc.GetSpec().GetRestart().GetCondition(); c == api.RestartCondition_RESTART_CONDITION_NONE ||
			c == api.RestartCondition_RESTART_CONDITION_ON_FAILURE {
			return nil
		}
	}
	pol := rollout.ForState(svc.GetSpec(), svc.GetUpdateStatus().GetState())
	if since := t.GetRunningSince(); since != nil && !p.now.Before(since.AsTime().Add(pol.Monitor)) {
		return nil
	}
	t.Unstable = true
	return p.update(t)
}

// ofThisUpdate: t was created for the update under way (the new spec,
// after it started, which matters once a paused update is resumed).
// created_at and started_at both come from the leader's clock.
func ofThisUpdate(svc *api.Service, t *api.Task) bool {
	us := svc.GetUpdateStatus()
	return t.GetSpecVersion() == svc.GetSpecVersion() &&
		!t.GetMeta().GetCreatedAt().AsTime().Before(us.GetStartedAt().AsTime())
}

// advanceUpdate moves svc's update on from what its slots show, and
// reports whether roll may replace replicas now. Slots where may allows
// no new task (a global service's paused node) keep their old replica and
// do not hold the update's completion. It leaves svc as it is unless it
// writes a new state.
func (p *pass) advanceUpdate(svc *api.Service, slots []*group, may func(*group) bool) (bool, error) {
	st := svc.GetUpdateStatus().GetState()
	if rollout.Paused(st) {
		return false, nil
	}
	if !rollout.Rolling(st) {
		return true, nil
	}
	pol := rollout.ForState(svc.GetSpec(), st)
	failures, last := 0, (*api.Task)(nil)
	for _, g := range slots {
		for _, t := range g.tasks {
			if t.GetUnstable() && ofThisUpdate(svc, t) {
				failures++
				if last == nil || t.GetMeta().GetUpdatedAt().AsTime().After(last.GetMeta().GetUpdatedAt().AsTime()) {
					last = t
				}
			}
		}
	}
	if failures > 0 && float64(failures) > pol.MaxFailureRatio*float64(max(len(slots), 1)) {
		switch pol.Action {
		case api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE:
		case api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK:
			if svc.GetPreviousSpec() != nil {
				return false, p.startRollback(svc, p.failure(svc, last, failures, len(slots)))
			}
			return false, p.pause(svc, last, failures, len(slots))
		default:
			return false, p.pause(svc, last, failures, len(slots))
		}
	}
	done, wake := true, time.Time{}
	for _, g := range slots {
		o := g.occupant()
		switch {
		case o == nil || !may(g):
		case outdated(svc, o) || p.handingOff(g):
			done = false
		case finished(o):
		case !p.stable(o, pol):
			done = false
			if live(o) && started(o) {
				wake = earliest(wake, stableAt(o, pol))
			}
		}
	}
	if !done {
		p.wakeAt(svc.GetId(), wake)
		return true, nil
	}
	next := api.UpdateState_UPDATE_STATE_COMPLETED
	msg := "update completed"
	if st == api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED {
		next, msg = api.UpdateState_UPDATE_STATE_ROLLBACK_COMPLETED, "rollback completed"
	}
	us := cloneStatus(svc)
	us.State, us.Message, us.CompletedAt = next, msg, timestamppb.New(p.now)
	return true, p.setStatus(svc, us)
}

// failure describes the latest failed replica for the operator.
func (p *pass) failure(svc *api.Service, t *api.Task, failures, slots int) string {
	where := ""
	if n := p.node(t.GetNodeId()); n != nil {
		where = " on " + n.GetHostname()
	}
	why := t.GetStatus().GetMessage()
	if r := t.GetStatus().GetReason(); r != "" {
		why = r + ": " + why
	}
	name := fmt.Sprintf("%s.%d", svc.GetSpec().GetName(), t.GetSlot())
	if t.GetSlot() == 0 {
		name = svc.GetSpec().GetName()
	}
	return fmt.Sprintf("replica %s (task %s)%s %s: %s (%d of %d slots failed)",
		name, t.GetId(), where, endedHow(state(t)), why, failures, slots)
}

func (p *pass) pause(svc *api.Service, last *api.Task, failures, slots int) error {
	us := cloneStatus(svc)
	us.State = api.UpdateState_UPDATE_STATE_PAUSED
	prefix := "update paused: "
	if svc.GetUpdateStatus().GetState() == api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED {
		us.State, prefix = api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED, "rollback paused: "
	}
	us.Message = prefix + p.failure(svc, last, failures, slots)
	return p.setStatus(svc, us)
}

// startRollback returns svc to its previous spec, as `service rollback`
// would: the next pass rolls the replicas back under the rollback policy.
func (p *pass) startRollback(svc *api.Service, why string) error {
	s := cloneService(svc)
	s.PreviousSpec, s.Spec = s.Spec, s.PreviousSpec
	s.SpecVersion++
	s.UpdateStatus = &api.UpdateStatus{
		State:     api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED,
		StartedAt: timestamppb.New(p.now),
		Message:   "rollback started: " + why,
	}
	p.more[svc.GetId()] = true
	return p.updateService(s)
}

func (p *pass) setStatus(svc *api.Service, us *api.UpdateStatus) error {
	s := cloneService(svc)
	s.UpdateStatus = us
	return p.updateService(s)
}

// wakeAt asks for another pass over the service at t (zero: none).
func (p *pass) wakeAt(id string, t time.Time) {
	if t.IsZero() {
		return
	}
	p.wake[id] = earliest(p.wake[id], t)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func endedHow(s api.TaskState) string {
	switch s {
	case api.TaskState_TASK_STATE_FAILED:
		return "failed"
	case api.TaskState_TASK_STATE_REJECTED:
		return "was rejected"
	case api.TaskState_TASK_STATE_COMPLETE:
		return "exited"
	}
	return "ended"
}
