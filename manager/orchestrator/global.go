package orchestrator

import (
	"cmp"
	"slices"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
)

// eligible: a global service whose placement fits n places a new task
// on n.
func eligible(fits func(*api.Node) bool, n *api.Node) bool {
	return placement.Available(n) && fits(n)
}

// keeps: a global service whose placement fits n keeps its task on n. A
// paused node, one whose state a new leader does not know yet, and one
// down or partitioned within its grace keep what they run.
func (p *pass) keeps(fits func(*api.Node) bool, n *api.Node) bool {
	return n != nil && !p.nodeLost(n.GetId()) &&
		n.GetAvailability() != api.NodeAvailability_NODE_AVAILABILITY_DRAIN &&
		fits(n)
}

// reconcileGlobal keeps one task of svc on every eligible node; for a
// global job, one completion of its current iteration (jobs.go).
func (p *pass) reconcileGlobal(svc *api.Service) error {
	job := api.IsJob(svc.GetSpec().GetMode())
	fits := placement.Matcher(svc.GetSpec().GetPlacement())
	byNode := map[string]*group{}
	for _, t := range p.tx.ListTasksByServiceShallow(svc.GetId()) {
		if t.GetSlot() != 0 || t.GetNodeId() == "" { // left from replicated mode
			if err := p.retire(t); err != nil {
				return err
			}
			continue
		}
		g := byNode[t.GetNodeId()]
		if g == nil {
			g = &group{nodeID: t.GetNodeId()}
			byNode[t.GetNodeId()] = g
		}
		g.tasks = append(g.tasks, t)
	}
	if job {
		for _, g := range byNode {
			if err := p.leaveIteration(svc, g); err != nil {
				return err
			}
		}
	}
	for _, n := range p.tx.ListNodes() {
		p.nodes[n.GetId()] = n
		if byNode[n.GetId()] == nil && eligible(fits, n) {
			byNode[n.GetId()] = &group{nodeID: n.GetId()}
		}
	}
	groups := make([]*group, 0, len(byNode))
	for _, g := range byNode {
		byAge(g.tasks)
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *group) int { return cmp.Compare(a.nodeID, b.nodeID) })

	var occupied []*group
	for _, g := range groups {
		if err := p.reconcileNode(svc, fits, g); err != nil {
			return err
		}
		if g.occupant() != nil {
			occupied = append(occupied, g)
		}
	}
	may := func(g *group) bool { return eligible(fits, p.node(g.nodeID)) }
	if !job { // a job runs a new iteration instead of rolling
		if err := p.roll(svc, occupied, may); err != nil {
			return err
		}
	}
	limit := historyLimit(svc)
	for _, g := range groups {
		n, keep := limit, func(*api.Task) bool { return false }
		if g.occupant() == nil {
			// The node's agent learns to stop what it still runs from its
			// orphaned tasks; they go with the node.
			n, keep = 0, func(t *api.Task) bool {
				return state(t) == api.TaskState_TASK_STATE_ORPHANED && p.node(g.nodeID) != nil
			}
		}
		if err := p.trim(g, n, keep); err != nil {
			return err
		}
	}
	return nil
}

// reconcileNode settles svc's task on one node: stopped when the node no
// longer keeps it (orphaned when the node is down), restarted per policy,
// created when the node is eligible and has none. fits is svc's
// placement.
func (p *pass) reconcileNode(svc *api.Service, fits func(*api.Node) bool, g *group) error {
	n := p.node(g.nodeID)
	if !p.keeps(fits, n) {
		down := p.nodeLost(g.nodeID)
		job := api.IsJob(svc.GetSpec().GetMode())
		for _, t := range g.tasks {
			var err error
			switch {
			case down && p.lost(t):
				err = p.orphan(t)
			case job && n != nil && ended(t) && completed(t):
				// A global job's completion stands on a node that is
				// drained, down or no longer matches: were it dropped,
				// the node would run the job again once it is back.
				t.DesiredState = api.TaskState_TASK_STATE_COMPLETE
				err = p.update(t)
			case job && n != nil && finished(t):
			case occupant(t):
				err = p.retire(t)
			}
			if err != nil {
				return err
			}
		}
		g.prune(p)
		return nil
	}
	canPlace := eligible(fits, n)
	if err := p.settle(svc, g, canPlace, false); err != nil {
		return err
	}
	if g.occupant() == nil && canPlace {
		t, err := p.spawn(svc, 0, g.nodeID, fresh)
		if err != nil {
			return err
		}
		g.tasks = append(g.tasks, t)
	}
	return nil
}
