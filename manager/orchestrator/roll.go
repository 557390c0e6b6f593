package orchestrator

import (
	"cmp"
	"slices"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
)

// roll replaces occupants running an outdated spec (see outdated), in
// groups where may allows a new task, under the policy in force
// (rollout.ForState) and only while advanceUpdate allows it. Tasks that
// are not running yet, and finished ones, are replaced at once: stopping
// them interrupts nothing. Running ones go parallelism slots at a time: a
// slot is in flight until its new replica is stable, and the next slot
// starts delay after the latest one became stable. Stop-first stops the
// old replica and starts the new one in its slot; start-first starts the
// new one beside it (replaces = the old one's id) and stops the old one
// once the new one runs (handOff).
func (p *pass) roll(svc *api.Service, occupied []*group, may func(*group) bool) error {
	for _, g := range occupied {
		if err := p.handOff(g); err != nil {
			return err
		}
	}
	allowed, err := p.advanceUpdate(svc, occupied, may)
	if err != nil || !allowed {
		return err
	}
	pol := rollout.ForState(svc.GetSpec(), svc.GetUpdateStatus().GetState())
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
		if err := p.replaceNotRunning(svc, g, o); err != nil {
			return err
		}
	}
	if len(running) == 0 {
		return nil
	}
	slices.SortFunc(running, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.nodeID, b.nodeID))
	})
	free := len(running)
	if pol.Parallelism > 0 {
		free = int(pol.Parallelism) - p.inFlight(svc, occupied, pol)
	}
	if free <= 0 {
		return nil
	}
	if next := p.nextStart(svc, occupied, pol); p.now.Before(next) {
		p.wakeAt(svc.GetId(), next)
		return nil
	}
	for _, g := range running[:min(free, len(running))] {
		o := g.occupant()
		if pol.StartFirst {
			t, err := p.spawnAs(svc, g.slot, g.nodeID, replacement, o.GetId())
			if err != nil {
				return err
			}
			g.tasks = append(g.tasks, t)
			continue
		}
		if err := p.replace(svc, g, o); err != nil {
			return err
		}
	}
	return nil
}

// inFlight counts the slots whose new replica is not stable yet. Under
// failure action continue a slot whose new replica failed is given up on:
// it does not hold the roll back.
func (p *pass) inFlight(svc *api.Service, occupied []*group, pol rollout.Policy) int {
	n := 0
	for _, g := range occupied {
		o := g.occupant()
		if o == nil || !live(o) || o.GetSpecVersion() != svc.GetSpecVersion() || p.stable(o, pol) {
			continue
		}
		if pol.Action == api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE && slices.ContainsFunc(g.tasks, func(t *api.Task) bool {
			return t.GetUnstable() && ofThisUpdate(svc, t)
		}) {
			continue
		}
		n++
	}
	return n
}

// nextStart is when the next running slot may be replaced: delay after
// the latest replica of this update became stable (zero without delay).
func (p *pass) nextStart(svc *api.Service, occupied []*group, pol rollout.Policy) time.Time {
	if pol.Delay <= 0 {
		return time.Time{}
	}
	var last time.Time
	for _, g := range occupied {
		o := g.occupant()
		if o != nil && p.stable(o, pol) && ofThisUpdate(svc, o) && o.GetRunningSince() != nil {
			if at := stableAt(o, pol); at.After(last) {
				last = at
			}
		}
	}
	if last.IsZero() {
		return last
	}
	return last.Add(pol.Delay)
}

// replaceNotRunning replaces an outdated task that has not run yet. A
// start-first replacement that has not run yields to the replica it was
// to replace when that one runs the current spec (a rollback came first).
func (p *pass) replaceNotRunning(svc *api.Service, g *group, o *api.Task) error {
	if old := g.find(o.GetReplaces()); old != nil && live(old) && !outdated(svc, old) {
		return p.stop(o)
	}
	return p.replace(svc, g, o)
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

// handOff stops, in g, a replica a start-first update replaced once its
// replacement runs. Drains hand off the same way (drainSlot).
func (p *pass) handOff(g *group) error {
	for _, t := range g.tasks {
		if !live(t) || p.draining(t.GetNodeId()) {
			continue
		}
		if r := g.replacementOf(t); r != nil && updateReplacement(t, r) && live(r) && started(r) {
			if err := p.stop(t); err != nil {
				return err
			}
		}
	}
	g.prune(p)
	return nil
}

// updateReplacement: r, which replaces t, was started by an update (it
// runs a newer spec), not by a drain.
func updateReplacement(t, r *api.Task) bool { return r.GetSpecVersion() > t.GetSpecVersion() }

// handingOff: g still runs a replica that its replacement takes over from.
func (p *pass) handingOff(g *group) bool {
	for _, t := range g.tasks {
		if p.handedOver(g, t) {
			return true
		}
	}
	return false
}
