package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// NodeRemover takes a node out of the cluster: out of raft first when it
// is a manager (with the voter rules), then its Node object.
// membership.Server implements it.
type NodeRemover interface {
	RemoveNode(ctx context.Context, node *api.Node) error
}

// WithNodeRemover lets the drain machine remove a node drained for `jaco
// node remove`. Without one, a drained worker's Node is deleted directly
// (all a worker's removal is) and a drained manager waits, DRAINED, for a
// removal that can take it out of raft.
func WithNodeRemover(r NodeRemover) Option { return func(o *Orchestrator) { o.remover = r } }

// drainer is the drain machine's bookkeeping, run by Orchestrator.Run
// beside the reconcilers, which do the moving (see drainslot.go). For
// every node whose drain is DRAINING it writes progress to Node.drain:
// total and moved replicas (moved: its replacement runs, or it was
// dropped), TIMED_OUT with stuck_task_ids when a replica found no running
// replacement within replacement_timeout, DRAINED when no task on the node
// has yet to end; and it removes a DRAINED node whose drain has remove set.
//
// The timeout of a replica counts from when this drainer first saw it
// waiting: a new leader gives each waiting replica a fresh timeout.
type drainer struct {
	st      *store.Store
	log     *slog.Logger
	now     func() time.Time
	remover NodeRemover
	// since holds when each replica (old task id) was first seen waiting
	// for its replacement.
	since map[string]time.Time
}

func (o *Orchestrator) newDrainer() *drainer {
	return &drainer{st: o.st, log: o.log.With("part", "drain"), now: o.now, remover: o.remover,
		since: map[string]time.Time{}}
}

// run follows nodes and tasks until ctx is done, passing over the drains
// after every burst of changes and when a replica's timeout falls due.
func (d *drainer) run(ctx context.Context) {
	in := newIntake(false)
	// The channel carries only resets; in.kick says the store changed.
	events := d.st.Watch(ctx, store.Any(store.ObjectType[*api.Node](), store.ObjectType[*api.Task](), store.ObjectType[*api.Volume]()), in.filter)
	for {
		var timer <-chan time.Time
		wake, err := d.pass(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			d.log.Warn("drain step failed; retrying", "err", err)
			timer = time.After(retryDelay)
		case !wake.IsZero():
			timer = time.After(max(wake.Sub(d.now()), 0) + 10*time.Millisecond)
		}
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-in.kick:
		case <-timer:
		case <-ctx.Done():
			return
		}
	}
}

// pass writes every running drain's progress and removes the drained
// nodes that are to go. wake is when the next replica times out (zero:
// none waits).
func (d *drainer) pass(ctx context.Context) (wake time.Time, err error) {
	now := d.now()
	type change struct {
		node *api.Node
		next *api.NodeDrain
	}
	var changes []change
	var removals []*api.Node
	seen := map[string]bool{}
	d.st.View(func(tx store.ReadTx) {
		var moving map[string][]string // read once a pass, at the first drain
		// Only draining nodes are copied: a pass runs on node events, and
		// cloning every node of a large cluster each time was a fifth of
		// a manager's CPU with 5 000 nodes (docs/bench/largestore.md).
		tx.EachNode(func(stored *api.Node) bool {
			if stored.GetAvailability() != api.NodeAvailability_NODE_AVAILABILITY_DRAIN {
				return true
			}
			n := proto.CloneOf(stored)
			dr := n.GetDrain()
			switch dr.GetState() {
			case api.DrainState_DRAIN_STATE_DRAINING:
				if moving == nil {
					moving = volumesMoving(tx)
				}
				next, w := d.progress(tx, n, now, seen, moving[n.GetId()])
				if !proto.Equal(next, dr) {
					changes = append(changes, change{n, next})
				}
				if next.GetState() == api.DrainState_DRAIN_STATE_DRAINED && next.GetRemove() {
					removals = append(removals, n)
				}
				if !w.IsZero() && (wake.IsZero() || w.Before(wake)) {
					wake = w
				}
			case api.DrainState_DRAIN_STATE_DRAINED:
				if dr.GetRemove() {
					removals = append(removals, n)
				}
			}
			return true
		})
	})
	for id := range d.since {
		if !seen[id] {
			delete(d.since, id)
		}
	}
	if len(changes) > 0 {
		err := d.st.Update(ctx, func(tx *store.Tx) error {
			for _, c := range changes {
				cur := tx.GetNode(c.node.GetId())
				// Changed meanwhile (cancelled, drained again): the
				// change's event brings another pass.
				if cur == nil || !proto.Equal(cur.GetDrain(), c.node.GetDrain()) ||
					cur.GetAvailability() != c.node.GetAvailability() {
					continue
				}
				cur.Drain = c.next
				if err := tx.Update(cur); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return wake, fmt.Errorf("write drain progress: %w", err)
		}
		for _, c := range changes {
			if c.next.GetState() != c.node.GetDrain().GetState() {
				d.log.Info("drain "+enumword.Of(c.next.GetState()), "hostname", c.node.GetHostname(),
					"node_id", c.node.GetId(), "moved", c.next.GetMoved(), "total", c.next.GetTotal(), "message", c.next.GetMessage())
			}
		}
	}
	for _, n := range removals {
		if err := d.remove(ctx, n); err != nil {
			d.note(ctx, n.GetId(), fmt.Sprintf("drained; removal failed, retrying: %v", err))
			return wake, err
		}
	}
	return wake, nil
}

// note puts msg on a drained node's drain, for the operator watching.
func (d *drainer) note(ctx context.Context, nodeID, msg string) {
	err := d.st.Update(ctx, func(tx *store.Tx) error {
		n := tx.GetNode(nodeID)
		if n.GetDrain().GetState() != api.DrainState_DRAIN_STATE_DRAINED || n.GetDrain().GetMessage() == msg {
			return nil
		}
		n.Drain.Message = msg
		return tx.Update(n)
	})
	if err != nil && ctx.Err() == nil {
		d.log.Warn("cannot note a failed removal on the node", "node_id", nodeID, "err", err)
	}
}

// progress works out n's drain from the tasks on it and moving, how far
// each volume leaving it has got (volumesMoving). seen collects the
// replicas still waiting; w is when the first of them times out.
func (d *drainer) progress(tx store.ReadTx, n *api.Node, now time.Time, seen map[string]bool, moving []string) (next *api.NodeDrain, w time.Time) {
	dr := n.GetDrain()
	timeout := dr.GetReplacementTimeout().AsDuration()
	if timeout <= 0 {
		timeout = api.DefaultDrainTimeout
	}
	var waiting, unended int
	var stuck, why []string
	// replacing indexes each service's tasks by the task they replace,
	// read once per service.
	replacing := map[string]map[string][]*api.Task{}
	for _, t := range tx.ListTasksByNode(n.GetId()) {
		if terminal(state(t)) {
			continue
		}
		unended++
		if !live(t) {
			continue
		}
		waiting++
		if t.GetSlot() == 0 {
			continue // global: the global reconciler drops it
		}
		seen[t.GetId()] = true
		since, ok := d.since[t.GetId()]
		if !ok {
			since = now
			d.since[t.GetId()] = now
		}
		idx, ok := replacing[t.GetServiceId()]
		if !ok {
			idx = map[string][]*api.Task{}
			tx.EachTask(t.GetServiceId(), "", func(c *api.Task) bool {
				if c.GetReplaces() != "" {
					idx[c.GetReplaces()] = append(idx[c.GetReplaces()], c)
				}
				return true
			})
			replacing[t.GetServiceId()] = idx
		}
		r := newestOccupant(idx[t.GetId()])
		if r != nil && live(r) && started(r) {
			continue // runs: the reconciler stops t next
		}
		deadline := since.Add(timeout)
		if now.Before(deadline) {
			if w.IsZero() || deadline.Before(w) {
				w = deadline
			}
			continue
		}
		msg := fmt.Sprintf("%s.%d (task %s) has no running replacement after %s", t.GetServiceName(), t.GetSlot(), t.GetId(), timeout)
		if r != nil {
			stuck = append(stuck, r.GetId())
			msg += fmt.Sprintf(" (replacement %s is %s", r.GetId(), enumword.Of(state(r)))
			if rs := r.GetStatus().GetReason(); rs != "" {
				msg += ": " + rs
			}
			msg += ")"
		} else {
			stuck = append(stuck, t.GetId())
		}
		why = append(why, msg)
	}
	// A volume moving off the node (docs/adr/0064-volume-move.md) keeps
	// the drain going until its copy is verified: the node must not go
	// before its data has.
	unended += len(moving)
	next = proto.Clone(dr).(*api.NodeDrain)
	// Replicas already stopping (a global one the reconciler dropped
	// before this pass saw it) count as moved.
	next.Total = max(dr.GetTotal(), dr.GetMoved()+uint32(waiting), uint32(unended))
	next.Moved = next.Total - uint32(waiting)
	next.StuckTaskIds = nil
	switch {
	case len(stuck) > 0:
		next.State = api.DrainState_DRAIN_STATE_TIMED_OUT
		next.StuckTaskIds = stuck
		// The CLI trims this prefix (cmd/jaco trimReason) to print the
		// drain_timeout error.
		next.Message = "pending: " + reason.DrainTimeout + ": " + strings.Join(why, "; ")
		w = time.Time{}
	case unended == 0:
		next.State = api.DrainState_DRAIN_STATE_DRAINED
		next.Message = "drained"
		if dr.GetRemove() {
			next.Message = "drained; removing the node"
		}
	case waiting == 0 && len(moving) > 0:
		next.Message = "moving " + strings.Join(moving, "; ")
	case waiting == 0:
		next.Message = fmt.Sprintf("waiting for %d replicas to stop", unended)
	default:
		next.Message = fmt.Sprintf("moving %d replicas", waiting)
		if len(moving) > 0 {
			next.Message += "; " + strings.Join(moving, "; ")
		}
	}
	return next, w
}

// volumesMoving says, by the node its data is leaving, for each volume
// not yet verified on its new node, how far its copy is.
func volumesMoving(tx store.ReadTx) map[string][]string {
	out := map[string][]string{}
	for _, v := range tx.ListVolumes() {
		m := v.GetMove()
		if m == nil || m.GetState() == api.VolumeMoveState_VOLUME_MOVE_STATE_CLEANUP {
			continue
		}
		s := "volume " + v.GetSpec().GetName() + ": "
		switch m.GetState() {
		case api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING:
			s += "stopping its replicas"
		case api.VolumeMoveState_VOLUME_MOVE_STATE_FAILED:
			s += fmt.Sprintf("copy failed (attempt %d), trying again: %s", m.GetAttempts(), m.GetError())
		default:
			s += api.VolumeMoveProgress(m)
		}
		out[m.GetFromNode()] = append(out[m.GetFromNode()], s)
	}
	return out
}

// newestOccupant is the newest of tasks that holds its slot, or nil.
func newestOccupant(tasks []*api.Task) *api.Task {
	g := &group{tasks: slices.Clone(tasks)}
	byAge(g.tasks)
	return g.occupant()
}

// remove takes a drained node out of the cluster.
func (d *drainer) remove(ctx context.Context, n *api.Node) error {
	if d.remover != nil {
		if err := d.remover.RemoveNode(ctx, n); err != nil {
			return fmt.Errorf("remove drained node %s: %w", n.GetHostname(), err)
		}
		d.log.Info("drained node removed", "hostname", n.GetHostname(), "node_id", n.GetId())
		return nil
	}
	if n.GetRaftId() != 0 {
		return nil // a manager leaves raft first; only a NodeRemover can do that
	}
	err := d.st.Update(ctx, func(tx *store.Tx) error {
		if cur := tx.GetNode(n.GetId()); cur != nil {
			return tx.Delete(cur)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete drained node %s: %w", n.GetHostname(), err)
	}
	d.log.Info("drained node removed", "hostname", n.GetHostname(), "node_id", n.GetId())
	return nil
}
