package orchestrator

import (
	"maps"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// dirty is the work the store's events have asked for since the last pass:
// services to reconcile, and nodes whose change concerns the services
// with tasks on them and every global service.
type dirty struct {
	services map[string]bool
	nodes    map[string]bool
	everyone bool
	// later holds services to reconcile at a time (an update waiting on
	// the clock), whatever the store does meanwhile.
	later map[string]time.Time
}

func newDirty() *dirty {
	return &dirty{services: map[string]bool{}, nodes: map[string]bool{}, everyone: true, later: map[string]time.Time{}}
}

// wakeAt asks for a pass over service id at t; the earliest ask stands.
func (d *dirty) wakeAt(id string, t time.Time) {
	if old, ok := d.later[id]; !ok || t.Before(old) {
		d.later[id] = t
	}
}

// next is the earliest time a service asked to be looked at again.
func (d *dirty) next() (time.Time, bool) {
	var first time.Time
	for _, t := range d.later {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first, !first.IsZero()
}

// due marks the services whose time has come.
func (d *dirty) due(now time.Time) {
	for id, t := range d.later {
		if !now.Before(t) {
			d.services[id] = true
			delete(d.later, id)
		}
	}
}

// merge adds what o marks.
func (d *dirty) merge(o *dirty) {
	for id := range o.services {
		d.services[id] = true
	}
	for id := range o.nodes {
		d.nodes[id] = true
	}
	d.everyone = d.everyone || o.everyone
}

// all marks every service; resolve does the reading.
func (d *dirty) all(store.ReadTx) { d.everyone = true }

func (d *dirty) note(e store.Event) {
	switch obj := e.Object.(type) {
	case *api.Service:
		d.services[obj.GetId()] = true
	case *api.Task:
		d.services[obj.GetServiceId()] = true
	case *api.Node:
		if old, ok := e.Old.(*api.Node); !ok || nodeChanged(old, obj) {
			d.nodes[obj.GetId()] = true
		}
	default:
		if e.Kind == store.EventReset {
			d.everyone = true
		}
	}
}

// decisive filters the watch: a task update that changes only the task's
// meta or the details of its status (message, timestamp, the scheduler's
// pending reason) decides nothing here. Dropping it before the watch
// clones it spares a pass over the service's tasks too: with 100 000
// replicas pending, those passes were most of the leader's work.
func decisive(e store.Event) bool {
	t, ok := e.Object.(*api.Task)
	if !ok {
		return true
	}
	old, ok := e.Old.(*api.Task)
	if !ok || !proto.Equal(decidingPart(old), decidingPart(t)) {
		return true
	}
	// Stored tasks share their spec (api.Specs): most updates keep the
	// very same one, and comparing it field by field is most of the cost.
	return old.GetSpec() != t.GetSpec() && !proto.Equal(old.GetSpec(), t.GetSpec())
}

// decidingPart is what of t a pass decides from, its spec aside: all but
// its meta and its status beyond the state.
func decidingPart(t *api.Task) *api.Task {
	c := t.Shallow()
	c.Meta, c.Spec = nil, nil
	c.Status = &api.TaskStatus{State: state(t)}
	if t.GetRebalance() {
		// A move the scheduler cannot place is given up (rebalance.go).
		c.Status.Reason = t.GetStatus().GetReason()
	}
	return c
}

// nodeChanged: the change matters to placement or to node-down handling
// (not, say, a new status timestamp).
func nodeChanged(old, n *api.Node) bool {
	return old.GetStatus().GetState() != n.GetStatus().GetState() ||
		old.GetAvailability() != n.GetAvailability() ||
		old.GetDrain().GetState() != n.GetDrain().GetState() ||
		old.GetDrain().GetForce() != n.GetDrain().GetForce() ||
		placement.Hostname(old) != placement.Hostname(n) ||
		old.GetRole() != n.GetRole() ||
		!maps.Equal(old.GetLabels(), n.GetLabels())
}

// resolve turns node marks (and a mark of everything) into services.
func (d *dirty) resolve(tx store.ReadTx) {
	if d.everyone {
		for _, s := range tx.ListServices() {
			d.services[s.GetId()] = true
		}
		tx.EachTask("", "", func(t *api.Task) bool {
			d.services[t.GetServiceId()] = true
			return true
		})
		d.everyone = false
		clear(d.nodes)
		return
	}
	if len(d.nodes) == 0 {
		return
	}
	for _, s := range tx.ListServices() {
		if api.PerNode(s.GetSpec().GetMode()) {
			d.services[s.GetId()] = true
		}
	}
	for id := range d.nodes {
		tx.EachTask("", id, func(t *api.Task) bool {
			d.services[t.GetServiceId()] = true
			return true
		})
	}
	clear(d.nodes)
}
