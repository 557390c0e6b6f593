package dispatcher

import (
	"slices"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// endpointEvent passes the changes that can change an endpoint: services,
// networks and nodes, and tasks with addresses before or after. Status
// reports of replicas on no network, most task writes, do not.
func endpointEvent(e store.Event) bool {
	switch o := e.Object.(type) {
	case *api.Service, *api.Network, *api.Node:
		return true
	case *api.Task:
		if len(o.GetStatus().GetAddresses()) > 0 {
			return true
		}
		old, _ := e.Old.(*api.Task)
		return len(old.GetStatus().GetAddresses()) > 0
	}
	return false
}

// readEndpoints fills the table from a view of the store. Called with
// Server.mu held.
func readEndpoints(t *term, tx store.ReadTx) {
	t.endpoints.reset(tx.ListNetworks(), tx.ListServices(), store.AllTasks(tx), tx.ListNodes())
}

// maxEndpointDrain bounds the events taken in one go: enough to fold a
// batch of status writes into one wake-up of each session, few enough
// that the lock is not held long.
const maxEndpointDrain = 256

// watchEndpoints keeps the endpoint table in step with the store and wakes
// the sessions of the nodes on a changed network at once: no batching
// here, so a replica's RUNNING reaches every node in the time its status
// write takes. Events already queued are applied together (never waited
// for), so a burst wakes each session once.
func (s *Server) watchEndpoints(t *term, events <-chan store.Event) {
	for e := range events {
		s.mu.Lock()
		reset := false
		var changed []string
		for i := 0; ; i++ {
			if e.Kind == store.EventReset {
				reset = true
			} else {
				changed = append(changed, applyEndpointEvent(t.endpoints, e)...)
			}
			if i+1 == maxEndpointDrain {
				break
			}
			var ok bool
			select {
			case e, ok = <-events:
			default:
			}
			if !ok {
				break
			}
		}
		if reset {
			s.st.View(func(tx store.ReadTx) { readEndpoints(t, tx) })
			notifyAll(t)
		} else if len(changed) > 0 {
			slices.Sort(changed)
			changed = slices.Compact(changed)
			for _, sess := range t.sessions {
				if holds(sess.node, changed) {
					sess.notify()
				}
			}
		}
		s.mu.Unlock()
	}
}

// applyEndpointEvent records one change; it returns the networks whose
// view changed.
func applyEndpointEvent(tab *endpointTable, e store.Event) []string {
	del := e.Kind == store.EventDelete
	switch o := e.Object.(type) {
	case *api.Service:
		if del {
			return tab.removeService(o.GetId())
		}
		return tab.setService(o)
	case *api.Network:
		if del {
			return tab.removeNetwork(o.GetId())
		}
		return tab.setNetwork(o)
	case *api.Node:
		if del {
			return tab.removeNode(o.GetId())
		}
		return tab.setNode(o)
	case *api.Task:
		if del {
			return tab.removeTask(o.GetId())
		}
		return tab.setTask(o)
	}
	return nil
}
