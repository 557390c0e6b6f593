package orchestrator

import (
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
)

// The reconciler's part of a drain (the drainer only tracks progress on
// the Node): a replicated task live on a node whose drain is DRAINING gets
// a replacement in its slot (replaces = its id) that the scheduler places
// elsewhere; the old task keeps running until the replacement RUNS, and is
// then stopped (start-first). While the node's availability stays DRAIN,
// such a "handed over" task shares its slot with its replacement and is
// left out of the slot's accounting: it neither counts as an occupant nor
// gets stopped as a duplicate, and the slot is not refilled for it.

// draining: the node's availability is DRAIN, whatever its drain state.
func (p *pass) draining(nodeID string) bool {
	return nodeID != "" && p.node(nodeID).GetAvailability() == api.NodeAvailability_NODE_AVAILABILITY_DRAIN
}

// drainRunning: the node's drain machine is moving its replicas now.
func (p *pass) drainRunning(nodeID string) bool {
	return p.draining(nodeID) && p.node(nodeID).GetDrain().GetState() == api.DrainState_DRAIN_STATE_DRAINING
}

// replacementOf is the newest occupant of g that replaces t, or nil.
func (g *group) replacementOf(t *api.Task) *api.Task {
	for i := len(g.tasks) - 1; i >= 0; i-- {
		r := g.tasks[i]
		if r.GetReplaces() == t.GetId() && occupant(r) {
			return r
		}
	}
	return nil
}

// find is g's task with id, or nil.
func (g *group) find(id string) *api.Task {
	for _, t := range g.tasks {
		if t.GetId() == id {
			return t
		}
	}
	return nil
}

// handedOver: t is live (its node not down) and its slot holds its
// replacement, which a drain, a start-first update or a rebalance
// started. The drain, handOff or settleMoves decides when t stops.
func (p *pass) handedOver(g *group, t *api.Task) bool {
	if !live(t) || p.lost(t) {
		return false
	}
	r := g.replacementOf(t)
	return r != nil && (p.draining(t.GetNodeId()) || updateReplacement(t, r) || r.GetRebalance())
}

// dropPinned stops g's live tasks on nodes under a forced drain that
// svc is pinned to: they have nowhere else to go. The slot is then
// refilled by the usual rules, and the new task waits for a node its pin
// allows. It runs before slots are counted.
func (p *pass) dropPinned(svc *api.Service, g *group) error {
	for _, t := range g.tasks {
		if !live(t) || p.lost(t) || !p.drainRunning(t.GetNodeId()) {
			continue
		}
		if n := p.node(t.GetNodeId()); placement.PinnedTo(svc.GetSpec().GetPlacement(), n) && n.GetDrain().GetForce() {
			if err := p.stop(t); err != nil {
				return err
			}
		}
	}
	g.prune(p)
	return nil
}

// drainSlot moves g's tasks off draining nodes: a replacement for each
// live one that has none; the old one stopped once its replacement runs.
// Pinned replicas of an unforced drain get a replacement too, which stays
// pending until the drain times out.
func (p *pass) drainSlot(svc *api.Service, g *group) error {
	for _, t := range g.tasks {
		if !live(t) || p.lost(t) || !p.drainRunning(t.GetNodeId()) {
			continue
		}
		r := g.replacementOf(t)
		if r == nil {
			nt, err := p.spawnAs(svc, g.slot, "", replacement, t.GetId())
			if err != nil {
				return err
			}
			g.tasks = append(g.tasks, nt)
			continue
		}
		if live(r) && started(r) {
			if err := p.stop(t); err != nil {
				return err
			}
		}
	}
	g.prune(p)
	return nil
}
