package orchestrator

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/manager/placement"
)

// Rebalancing (docs/adr/0040). A replicated service whose rebalance is
// REQUESTED or MOVING has its replicas moved until the nodes that may take
// them hold them evenly: with n replicas on k such nodes, each holds
// n/k, or one more. The fewest replicas move: the nodes holding the most
// keep the larger shares, and of nodes holding as many, the less loaded
// one keeps more. Replicas on other nodes (paused, down, draining) stay
// where they are and are not counted.
//
// A move is a task in the replica's slot with rebalance set and replaces
// naming the replica, placed by the scheduler (which puts it on the node
// holding the fewest of the service's replicas). It goes under the
// service's update policy: start-first keeps the replica until its
// successor runs, stop-first stops it first; parallelism moves at a time,
// each in flight until its successor is stable, the next one delay
// after. A move the scheduler can place nowhere but on the replica's own
// node, or nowhere at all, is given up (start-first only: stop-first has
// stopped the replica already, and its successor waits like any pending
// replica). A rebalance waits while an update rolls or is paused, and
// ends (COMPLETED) once the spread is even or as many moves as it planned
// have begun, and none is in flight.

// rebalancing: svc's rebalance was asked for and has not ended.
func rebalancing(svc *api.Service) bool {
	switch svc.GetRebalance().GetState() {
	case api.RebalanceState_REBALANCE_STATE_REQUESTED, api.RebalanceState_REBALANCE_STATE_MOVING:
		return true
	}
	return false
}

// moveOf is t's successor in g when a rebalance is moving t, else nil.
func (g *group) moveOf(t *api.Task) *api.Task {
	if r := g.replacementOf(t); r != nil && r.GetRebalance() {
		return r
	}
	return nil
}

// rebalance carries svc's rebalance on over its occupied slots.
func (p *pass) rebalance(svc *api.Service, occupied []*group) error {
	pol := rollout.Update(svc.GetSpec())
	inFlight, unplaced, lastStable, err := p.settleMoves(svc, occupied, pol)
	if err != nil || !rebalancing(svc) {
		return err
	}
	st := svc.GetUpdateStatus().GetState()
	if rollout.Rolling(st) || rollout.Paused(st) {
		return nil // its status is the update's to write this pass
	}
	// The scheduler counts a replica against its node until it has
	// stopped: planning while one stops would count nodes otherwise than
	// the scheduler places, and a move could land on the wrong node. The
	// replica's end brings the next pass.
	wait := stopping(occupied)
	rb := proto.CloneOf(svc.GetRebalance())
	if wait && rb.State == api.RebalanceState_REBALANCE_STATE_REQUESTED {
		return nil
	}
	var victims []victim
	if !wait {
		victims = p.overloaded(svc, occupied)
	}
	if rb.State == api.RebalanceState_REBALANCE_STATE_REQUESTED {
		rb.State, rb.Total, rb.Started, rb.Moved = api.RebalanceState_REBALANCE_STATE_MOVING, uint32(len(victims)), 0, 0
	}
	rb.Moved = p.movedSince(occupied, rb.GetRequestedAt().AsTime())
	budget := int(rb.Total) - int(rb.Started)
	if pol.Parallelism > 0 {
		budget = min(budget, int(pol.Parallelism)-inFlight)
	}
	next := time.Time{}
	if pol.Delay > 0 && !lastStable.IsZero() {
		next = lastStable.Add(pol.Delay)
	}
	switch {
	case wait || unplaced || budget <= 0 || len(victims) == 0:
	case p.now.Before(next):
		p.wakeAt(svc.GetId(), next)
	default:
		for _, v := range victims[:min(budget, len(victims))] {
			if err := p.move(svc, v, pol.StartFirst); err != nil {
				return err
			}
			rb.Started++
			inFlight++
		}
	}
	if inFlight == 0 && (rb.Started >= rb.Total || !wait && len(victims) == 0) {
		rb.State, rb.CompletedAt = api.RebalanceState_REBALANCE_STATE_COMPLETED, timestamppb.New(p.now)
	}
	rb.Message = rebalanceMessage(rb)
	if proto.Equal(rb, svc.GetRebalance()) {
		return nil
	}
	s := cloneService(svc)
	s.Rebalance = rb
	return p.updateService(s)
}

func rebalanceMessage(rb *api.RebalanceStatus) string {
	switch {
	case rb.State != api.RebalanceState_REBALANCE_STATE_COMPLETED:
		return fmt.Sprintf("moving replicas: %d of %d moved", rb.Moved, rb.Total)
	case rb.Total == 0:
		return "balanced already: nothing moved"
	case rb.Moved < rb.Total:
		return fmt.Sprintf("moved %d of %d replicas; the others found no other node to take them", rb.Moved, rb.Total)
	case rb.Moved == 1:
		return "balanced: moved 1 replica"
	}
	return fmt.Sprintf("balanced: moved %d replicas", rb.Moved)
}

// victim is a replica a rebalance is to move.
type victim struct {
	g *group
	t *api.Task
	// busy: t is a move's successor, its replica still running.
	busy bool
}

// settleMoves looks after the moves under way: a start-first replica is
// stopped once its successor runs on another node, and a successor the
// scheduler placed back on the replica's node, or nowhere, is given up.
// inFlight counts the moves whose successor is not stable yet, unplaced
// whether one of them has no node yet, and lastStable is when the latest
// successor became stable.
func (p *pass) settleMoves(svc *api.Service, occupied []*group, pol rollout.Policy) (inFlight int, unplaced bool, lastStable time.Time, err error) {
	for _, g := range occupied {
		for _, t := range g.tasks {
			r := g.moveOf(t)
			if r == nil || !live(t) || p.lost(t) || !live(r) {
				continue
			}
			switch {
			case r.GetNodeId() == "" && r.GetStatus().GetReason() != "",
				r.GetNodeId() == t.GetNodeId() && !started(r):
				err = p.stop(r)
			case started(r):
				err = p.stop(t)
			}
			if err != nil {
				return 0, false, time.Time{}, err
			}
		}
		g.prune(p)
		o := g.occupant()
		if o == nil || !o.GetRebalance() || !live(o) {
			continue
		}
		switch {
		case o.GetNodeId() == "":
			unplaced = true
			inFlight++
		case !p.stable(o, pol):
			inFlight++
			if started(o) {
				p.wakeAt(svc.GetId(), stableAt(o, pol))
			}
		case o.GetRunningSince() != nil && stableAt(o, pol).After(lastStable):
			lastStable = stableAt(o, pol)
		}
	}
	return inFlight, unplaced, lastStable, nil
}

// stopping: a replica of the slots was told to stop and has not ended.
func stopping(occupied []*group) bool {
	for _, g := range occupied {
		for _, t := range g.tasks {
			if t.GetDesiredState() == api.TaskState_TASK_STATE_SHUTDOWN && !terminal(state(t)) {
				return true
			}
		}
	}
	return false
}

// movedSince counts the successors started since the rebalance was asked
// for that run on another node than the replica they replaced.
func (p *pass) movedSince(occupied []*group, since time.Time) uint32 {
	var n uint32
	for _, g := range occupied {
		for _, r := range g.tasks {
			if !r.GetRebalance() || !started(r) || r.GetMeta().GetCreatedAt().AsTime().Before(since) {
				continue
			}
			if old := g.find(r.GetReplaces()); old == nil || old.GetNodeId() != r.GetNodeId() {
				n++
			}
		}
	}
	return n
}

// overloaded lists the replicas to move for an even spread, from the
// most crowded nodes first.
func (p *pass) overloaded(svc *api.Service, occupied []*group) []victim {
	fits := eligibleFor(svc.GetSpec())
	byNode := map[string][]victim{}
	for _, g := range occupied {
		o := g.occupant()
		if o == nil || !live(o) || o.GetNodeId() == "" || p.lost(o) {
			continue
		}
		// A move under way counts on its successor's node, where the
		// replica will be, and is not moved again.
		from := g.find(o.GetReplaces())
		busy := o.GetRebalance() && from != nil && live(from)
		if n := p.node(o.GetNodeId()); n != nil && fits(n) {
			byNode[o.GetNodeId()] = append(byNode[o.GetNodeId()], victim{g, o, busy})
		}
	}
	var nodes []string
	total := 0
	for _, n := range p.tx.ListNodes() {
		if fits(n) {
			nodes = append(nodes, n.GetId())
			total += len(byNode[n.GetId()])
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	slices.SortFunc(nodes, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(byNode[b]), len(byNode[a])),
			cmp.Compare(p.nodeLoad(a), p.nodeLoad(b)), cmp.Compare(a, b))
	})
	share, more := total/len(nodes), total%len(nodes)
	var out []victim
	for i, id := range nodes {
		limit := share
		if i < more {
			limit++
		}
		vs := byNode[id]
		if len(vs) <= limit {
			continue
		}
		// Moves under way stay; then the highest slots move, the lowest
		// stay where they are.
		slices.SortFunc(vs, func(a, b victim) int {
			return cmp.Or(cmp.Compare(boolInt(a.busy), boolInt(b.busy)), cmp.Compare(b.g.slot, a.g.slot))
		})
		for _, v := range vs[:len(vs)-limit] {
			if !v.busy {
				out = append(out, v)
			}
		}
	}
	return out
}

// eligibleFor reports whether a node may take the replicas of spec: as the
// scheduler's filters read it, resources aside (a move the scheduler
// cannot place is given up).
func eligibleFor(spec *api.ServiceSpec) func(*api.Node) bool {
	fits, runtime := placement.Matcher(spec.GetPlacement()), placement.RuntimeOf(spec)
	return func(n *api.Node) bool {
		return eligible(fits, n) && !n.GetDescription().GetIsolationUnavailable() && placement.SupportsRuntime(n, runtime)
	}
}

// move starts moving v: its successor, placed by the scheduler, takes
// over its slot; start-first keeps v running until then.
func (p *pass) move(svc *api.Service, v victim, startFirst bool) error {
	if !startFirst {
		if err := p.stop(v.t); err != nil {
			return err
		}
	}
	t, err := newTask(svc, v.g.slot, "", p.now, nil)
	if err != nil {
		return err
	}
	t.Replaces, t.Rebalance = v.t.GetId(), true
	if err := p.create(t, true); err != nil {
		return err
	}
	v.g.tasks = append(v.g.tasks, t)
	v.g.prune(p)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
