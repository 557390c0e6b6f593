package orchestrator

import (
	"time"

	"github.com/jaco-project/jaco/api"
)

// DefaultRestartDelay is the restart delay of a policy that sets none.
const DefaultRestartDelay = 5 * time.Second

// minHistory is how many terminal tasks a slot keeps at least, for
// `jaco service ps` and for counting restart attempts.
const minHistory = 5

func restartDelay(p *api.RestartPolicy) time.Duration {
	if p.GetDelay() == nil {
		return DefaultRestartDelay
	}
	return max(p.GetDelay().AsDuration(), 0)
}

// historyLimit is how many terminal tasks a slot of svc keeps.
func historyLimit(svc *api.Service) int {
	return max(minHistory, int(min(svc.GetSpec().GetRestart().GetMaxAttempts(), 1000))+1)
}

// failed: the replica ended in failure rather than completing.
func failed(t *api.Task) bool {
	switch state(t) {
	case api.TaskState_TASK_STATE_FAILED, api.TaskState_TASK_STATE_REJECTED:
		return true
	}
	return t.GetStatus().GetExitCode() != 0
}

// shouldRestart decides whether the ended task t of svc gets a replacement
// now. group is every task of t's slot (or node), t included. A job's
// condition any is on-failure, as Swarm has it: a completion is what a job
// is for, and running it again would be a second one (docs/adr/0060-jobs.md).
func shouldRestart(svc *api.Service, t *api.Task, group []*api.Task, now time.Time) bool {
	p := svc.GetSpec().GetRestart()
	cond := p.GetCondition()
	if cond == api.RestartCondition_RESTART_CONDITION_ANY && api.IsJob(svc.GetSpec().GetMode()) {
		cond = api.RestartCondition_RESTART_CONDITION_ON_FAILURE
	}
	switch cond {
	case api.RestartCondition_RESTART_CONDITION_NONE:
		return false
	case api.RestartCondition_RESTART_CONDITION_ON_FAILURE:
		if !failed(t) {
			return false
		}
	}
	limit := p.GetMaxAttempts()
	if limit == 0 {
		return true
	}
	window := p.GetWindow().AsDuration()
	var attempts uint64
	for _, o := range group {
		// A new spec, or a job's new iteration, starts a new count.
		if !restartAttempt(o) || o.GetSpecVersion() != svc.GetSpecVersion() || o.GetJobIteration() != t.GetJobIteration() {
			continue
		}
		if window > 0 && !o.GetNotBefore().AsTime().After(now.Add(-window)) {
			continue
		}
		attempts++
	}
	return attempts < limit
}
