package orchestrator

import (
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
)

// Jobs (docs/adr/0060-jobs.md). A job's replicas run to completion: a
// replica that exits 0 finishes its slot (desired COMPLETE, as any
// replica whose restart policy forbids another attempt) and is never
// started again; one that fails goes by the restart policy, whose
// condition any counts as on-failure for a job (shouldRestart). A job
// runs in iterations (Service.job_status): the Control API starts a new
// one with every change of the spec, force_update included, and every
// task carries the iteration it runs for (Task.job_iteration). Tasks of
// an older iteration leave their slots (leaveIteration), so a slot
// finished in one iteration runs again in the next. A job is never
// rolled out by the update machine, nor rebalanced.

// jobIteration is svc's current iteration (0 for a job stored without
// a job status: its tasks have 0 too).
func jobIteration(svc *api.Service) uint64 { return svc.GetJobStatus().GetIteration() }

// completed: the replica ran to its end and exited 0.
func completed(t *api.Task) bool {
	return state(t) == api.TaskState_TASK_STATE_COMPLETE && !failed(t)
}

// leaveIteration takes the tasks of g that run for an older iteration of
// svc out of their slot: live ones are stopped, ended and finished ones
// become history (desired SHUTDOWN), so that the slot runs again.
func (p *pass) leaveIteration(svc *api.Service, g *group) error {
	it := jobIteration(svc)
	for _, t := range g.tasks {
		if t.GetJobIteration() != it && occupant(t) {
			if err := p.stop(t); err != nil {
				return err
			}
		}
	}
	g.prune(p)
	return nil
}

// busy: the replica may be running now, whatever it is meant to do: live,
// or told to stop and not yet stopped. A job counts these against
// max_concurrent, so a replica being stopped (a drain, a new iteration)
// has ended before another takes its place.
func busy(t *api.Task) bool {
	if live(t) {
		return true
	}
	// A task stopped before any agent heard of it is deleted, not run.
	return !terminal(state(t)) && !neverAssigned(t)
}

// reconcileJob brings a replicated job's slots 1..replicas to one
// completion each in its current iteration, with at most max_concurrent
// replicas busy at once: an empty slot, lowest first, gets a task only
// while fewer are. A finished slot (completed, or failed beyond what its
// restart policy allows) stays as it is until the next iteration. A
// replica on a node lost is replaced in its slot at once (settle); one
// on a draining node is stopped, and its slot filled again elsewhere:
// stop-first, where a drain's hand-over is start-first, as the stopping
// replica counts against max_concurrent until it has stopped.
func (p *pass) reconcileJob(svc *api.Service) error {
	groups, bySlot, err := p.slotGroups(svc)
	if err != nil {
		return err
	}

	want := min(svc.GetSpec().GetReplicas(), limits.MaxReplicasCeiling)
	for _, g := range groups {
		if err := p.leaveIteration(svc, g); err != nil {
			return err
		}
		if g.slot > want {
			// Scaled away without a new iteration (a spec stored before
			// this rule): the slot goes.
			for _, t := range g.tasks {
				var err error
				switch {
				case p.lost(t):
					err = p.orphan(t)
				case occupant(t):
					err = p.retire(t)
				}
				if err != nil {
					return err
				}
			}
			g.prune(p)
			continue
		}
		if err := p.settle(svc, g, true, true); err != nil {
			return err
		}
		if err := p.dropPinned(svc, g); err != nil {
			return err
		}
		if err := p.stopDraining(g); err != nil {
			return err
		}
	}
	running := 0
	for _, g := range groups {
		for _, t := range g.tasks {
			if busy(t) {
				running++
			}
		}
	}
	// Empty slots get a task, lowest first, while the job has room; a
	// pass creates no more than the service holds already, at least a
	// share (as reconcileReplicated does).
	room := int(min(api.MaxConcurrentOf(svc.GetSpec()), limits.MaxReplicasCeiling)) - running
	created, budget := 0, max(p.share, len(groups))
	for slot := uint64(1); slot <= want && room > 0; slot++ {
		g := bySlot[slot]
		if g != nil && g.occupant() != nil {
			continue
		}
		if created == budget {
			p.more[svc.GetId()] = true
			break
		}
		t, err := p.spawn(svc, slot, "", fresh)
		if err != nil {
			return err
		}
		created++
		room--
		if g == nil {
			g = &group{slot: slot}
			bySlot[slot] = g
			groups = append(groups, g)
		}
		g.tasks = append(g.tasks, t)
	}
	limit := historyLimit(svc)
	for _, g := range groups {
		n := limit
		if g.slot > want {
			n = 0
		}
		if err := p.trim(g, n, nil); err != nil {
			return err
		}
	}
	return nil
}

// stopDraining stops g's live replica on a node whose drain is moving
// replicas; its slot is filled again, elsewhere, once it has stopped.
func (p *pass) stopDraining(g *group) error {
	for _, t := range g.tasks {
		if live(t) && !p.lost(t) && p.drainRunning(t.GetNodeId()) {
			if err := p.stop(t); err != nil {
				return err
			}
		}
	}
	g.prune(p)
	return nil
}
