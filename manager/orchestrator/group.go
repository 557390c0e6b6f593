package orchestrator

import (
	"slices"

	"github.com/jaco-project/jaco/api"
)

// group is the tasks of one replicated slot, or of one node of a global
// service, oldest first.
type group struct {
	slot   uint64
	nodeID string
	tasks  []*api.Task
}

// prune drops tasks the pass deleted.
func (g *group) prune(p *pass) {
	g.tasks = slices.DeleteFunc(g.tasks, func(t *api.Task) bool { return p.gone[t.GetId()] })
}

// occupant is the task holding the group's place, or nil. settle leaves
// at most one.
func (g *group) occupant() *api.Task {
	for i := len(g.tasks) - 1; i >= 0; i-- {
		if occupant(g.tasks[i]) {
			return g.tasks[i]
		}
	}
	return nil
}

// settle takes the decisions every group needs whatever the service's
// shape: tasks on down nodes are orphaned (live ones, when refill is set,
// replaced in the same slot at once); ended tasks are restarted or
// finished per the restart policy, when mayRestart (otherwise they wait);
// and of several occupants only the best stays.
func (p *pass) settle(svc *api.Service, g *group, mayRestart, refill bool) error {
	var fresh []*api.Task
	for _, t := range g.tasks {
		if err := p.markUnstable(svc, t); err != nil {
			return err
		}
		var replace bool
		why := replacement
		// A drain's replacement already holds the slot for t: t going
		// away leaves nothing to refill.
		taken := g.replacementOf(t) != nil
		switch {
		case p.lost(t):
			wasLive := live(t)
			if err := p.orphan(t); err != nil {
				return err
			}
			replace = refill && wasLive && !taken
		case ended(t) && state(t) == api.TaskState_TASK_STATE_ORPHANED:
			if err := p.stop(t); err != nil {
				return err
			}
			replace = refill && !taken
		case ended(t) && taken:
			if err := p.stop(t); err != nil {
				return err
			}
		case ended(t) && mayRestart:
			if !shouldRestart(svc, t, g.tasks, p.now) {
				t.DesiredState = api.TaskState_TASK_STATE_COMPLETE
				if err := p.update(t); err != nil {
					return err
				}
				continue
			}
			if err := p.stop(t); err != nil {
				return err
			}
			replace, why = true, restart
		}
		if replace {
			// A restarted replacement carries the drain's link on.
			nt, err := p.spawnAs(svc, g.slot, g.nodeID, why, t.GetReplaces())
			if err != nil {
				return err
			}
			fresh = append(fresh, nt)
		}
	}
	g.tasks = append(g.tasks, fresh...)
	g.prune(p)
	return p.dedupe(g)
}

// dedupe keeps one occupant: the newest live one, else the newest. A
// task handed over to a drain's replacement is no duplicate. Once the
// drain is over (cancelled), a replacement that never ran yields to the
// running replica it was to replace.
func (p *pass) dedupe(g *group) error {
	spared := map[*api.Task]bool{}
	for _, t := range g.tasks {
		spared[t] = p.handedOver(g, t)
	}
	var keep *api.Task
	for _, t := range g.tasks {
		if occupant(t) && !spared[t] && (keep == nil || live(t) || !live(keep)) {
			keep = t
		}
	}
	if keep != nil && keep.GetReplaces() != "" && !started(keep) {
		if o := g.find(keep.GetReplaces()); o != nil && live(o) && started(o) && !spared[o] {
			keep = o
		}
	}
	for _, t := range g.tasks {
		if t != keep && occupant(t) && !spared[t] {
			if err := p.stop(t); err != nil {
				return err
			}
		}
	}
	g.prune(p)
	return nil
}

// trim deletes history the group no longer needs: tasks that were stopped
// before any agent heard of them, and terminal tasks beyond the newest
// limit (all of them when the group is empty and limit is 0). keep spares
// tasks that must stay whatever the limit.
func (p *pass) trim(g *group, limit int, keep func(*api.Task) bool) error {
	var history []*api.Task
	for _, t := range g.tasks {
		switch {
		case occupant(t):
		case neverAssigned(t):
			if err := p.delete(t); err != nil {
				return err
			}
		case terminal(state(t)) && (keep == nil || !keep(t)):
			history = append(history, t)
		}
	}
	for i := 0; i < len(history)-limit; i++ {
		if err := p.delete(history[i]); err != nil {
			return err
		}
	}
	g.prune(p)
	return nil
}
