package orchestrator

import (
	"cmp"
	"slices"

	"github.com/jaco-project/jaco/api"
)

// updateParallelism is how many running tasks a rolling update replaces at
// a time.
const updateParallelism = 1

// roll replaces occupants running an outdated spec (see outdated), in
// groups where may allows a new task. Tasks that are not running yet, and
// finished ones, are replaced at once: stopping them interrupts nothing.
// Running ones are stopped and replaced in the same slot one at a time
// (stop-first); the next goes once no task of the new spec is on its way
// up (it runs, or it ended and the restart supervisor took over).
func (p *pass) roll(svc *api.Service, occupied []*group, may func(*group) bool) error {
	var running []*group
	for _, g := range occupied {
		o := g.occupant()
		if o == nil || !outdated(svc, o) || ended(o) || !may(g) {
			continue
		}
		if live(o) && started(o) {
			running = append(running, g)
			continue
		}
		if err := p.replace(svc, g, o); err != nil {
			return err
		}
	}
	if len(running) == 0 {
		return nil
	}
	slices.SortFunc(running, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.nodeID, b.nodeID))
	})
	inflight := 0
	for _, g := range occupied {
		if o := g.occupant(); o != nil && live(o) && !started(o) && !outdated(svc, o) {
			inflight++
		}
	}
	for i := 0; i < len(running) && inflight < updateParallelism; i++ {
		if err := p.replace(svc, running[i], running[i].occupant()); err != nil {
			return err
		}
		inflight++
	}
	return nil
}

func (p *pass) replace(svc *api.Service, g *group, old *api.Task) error {
	if err := p.stop(old); err != nil {
		return err
	}
	t, err := p.spawnAs(svc, g.slot, g.nodeID, replacement, old.GetReplaces())
	if err != nil {
		return err
	}
	g.tasks = append(g.tasks, t)
	g.prune(p)
	return nil
}
