package orchestrator

import (
	"cmp"
	"slices"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
)

// reconcileReplicated brings svc's slots in line with spec.replicas.
func (p *pass) reconcileReplicated(svc *api.Service) error {
	groups, bySlot, err := p.slotGroups(svc)
	if err != nil {
		return err
	}

	for _, g := range groups {
		if err := p.settle(svc, g, true, true); err != nil {
			return err
		}
		if err := p.dropPinned(svc, g); err != nil {
			return err
		}
	}
	var occupied []*group
	for _, g := range groups {
		if g.occupant() != nil {
			occupied = append(occupied, g)
		}
	}
	// The Control API refuses more than the cluster's limit; a spec
	// stored before there was one gets no more than the ceiling.
	want := int(min(svc.GetSpec().GetReplicas(), limits.MaxReplicasCeiling))
	if len(occupied) > want {
		p.rankForRemoval(occupied)
		for _, g := range occupied[:len(occupied)-want] {
			// A drain's replacement and the task it replaces go together.
			for _, t := range g.tasks {
				if occupant(t) {
					if err := p.retire(t); err != nil {
						return err
					}
				}
			}
			g.prune(p)
		}
		occupied = occupied[len(occupied)-want:]
	}
	used := map[uint64]bool{}
	for _, g := range occupied {
		used[g.slot] = true
	}
	// A pass creates as many tasks as the service holds already, at
	// least a share: reading the service's tasks is each pass's cost, so
	// growing geometrically keeps the passes that create N replicas to
	// about log2(N/share), where a fixed share made them N/share, each
	// reading up to N tasks.
	created, budget := 0, max(p.share, len(occupied))
	for slot := uint64(1); len(occupied) < want; slot++ {
		if used[slot] {
			continue
		}
		if created == budget {
			p.more[svc.GetId()] = true
			break
		}
		created++
		t, err := p.spawn(svc, slot, "", fresh)
		if err != nil {
			return err
		}
		g := bySlot[slot]
		if g == nil {
			g = &group{slot: slot}
			bySlot[slot] = g
			groups = append(groups, g)
		}
		g.tasks = append(g.tasks, t)
		occupied = append(occupied, g)
	}
	// Drains move the slots that stay (after scaling down, so that no
	// replacement is made for a slot about to be emptied).
	for _, g := range occupied {
		if err := p.drainSlot(svc, g); err != nil {
			return err
		}
	}
	if err := p.roll(svc, occupied, func(*group) bool { return true }); err != nil {
		return err
	}
	if err := p.rebalance(svc, occupied); err != nil {
		return err
	}
	limit := historyLimit(svc)
	for _, g := range groups {
		n := limit
		if g.occupant() == nil {
			n = 0
		}
		if err := p.trim(g, n, nil); err != nil {
			return err
		}
	}
	return nil
}

// rankForRemoval orders slots so the ones to empty first come first:
// not running (finished, or not yet started), then on the most loaded
// node, then the highest slot number.
func (p *pass) rankForRemoval(gs []*group) {
	key := func(g *group) (int, int, uint64) {
		t := g.occupant()
		running := 0
		if live(t) && started(t) {
			running = 1
		}
		return running, p.nodeLoad(t.GetNodeId()), g.slot
	}
	slices.SortFunc(gs, func(a, b *group) int {
		ar, al, as := key(a)
		br, bl, bs := key(b)
		if c := cmp.Compare(ar, br); c != 0 {
			return c
		}
		if c := cmp.Compare(bl, al); c != 0 {
			return c
		}
		return cmp.Compare(bs, as)
	})
}

// slotGroups are svc's tasks by slot, lowest slot first, each slot's
// tasks by age, and the same groups by slot number; a task without a
// slot, left from a global mode, is retired.
func (p *pass) slotGroups(svc *api.Service) ([]*group, map[uint64]*group, error) {
	bySlot := map[uint64]*group{}
	for _, t := range p.tx.ListTasksByServiceShallow(svc.GetId()) {
		if t.GetSlot() == 0 {
			if err := p.retire(t); err != nil {
				return nil, nil, err
			}
			continue
		}
		g := bySlot[t.GetSlot()]
		if g == nil {
			g = &group{slot: t.GetSlot()}
			bySlot[t.GetSlot()] = g
		}
		g.tasks = append(g.tasks, t)
	}
	groups := make([]*group, 0, len(bySlot))
	for _, g := range bySlot {
		byAge(g.tasks)
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *group) int { return cmp.Compare(a.slot, b.slot) })
	return groups, bySlot, nil
}
