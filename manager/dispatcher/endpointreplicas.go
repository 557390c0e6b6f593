package dispatcher

import (
	"maps"

	"github.com/jaco-project/jaco/api"
)

// replicaOf is what t contributes to its service's endpoints: nothing
// unless it is desired RUNNING, reported RUNNING (healthy, where the spec
// checks health: the agent reports RUNNING only then) and has addresses.
func replicaOf(t *api.Task) (replica, bool) {
	if t.GetDesiredState() != api.TaskState_TASK_STATE_RUNNING ||
		t.GetStatus().GetState() != api.TaskState_TASK_STATE_RUNNING ||
		len(t.GetStatus().GetAddresses()) == 0 || t.GetNodeId() == "" {
		return replica{}, false
	}
	r := replica{serviceID: t.GetServiceId(), nodeID: t.GetNodeId(), addrs: map[string]string{}}
	for _, a := range t.GetStatus().GetAddresses() {
		r.addrs[a.GetNetworkId()] = a.GetAddress()
	}
	return r, true
}

func sameReplica(a, b replica) bool {
	return a.serviceID == b.serviceID && a.nodeID == b.nodeID && maps.Equal(a.addrs, b.addrs)
}

// setTask records a created or changed task; it returns the networks
// whose endpoints changed.
func (e *endpointTable) setTask(t *api.Task) []string {
	r, serves := replicaOf(t)
	old, had := e.replicas[t.GetId()]
	switch {
	case !serves:
		return e.removeTask(t.GetId())
	case had && sameReplica(old, r):
		return nil
	}
	if had {
		delete(e.byService[old.serviceID], t.GetId())
	}
	e.replicas[t.GetId()] = r
	if e.byService[r.serviceID] == nil {
		e.byService[r.serviceID] = map[string]bool{}
	}
	e.byService[r.serviceID][t.GetId()] = true
	return e.bumpAddressed(old, r)
}

func (e *endpointTable) removeTask(id string) []string {
	old, had := e.replicas[id]
	if !had {
		return nil
	}
	delete(e.replicas, id)
	delete(e.byService[old.serviceID], id)
	if len(e.byService[old.serviceID]) == 0 {
		delete(e.byService, old.serviceID)
	}
	return e.bumpAddressed(old)
}

// bumpAddressed bumps every network the replicas have an address on.
func (e *endpointTable) bumpAddressed(rs ...replica) []string {
	var ids []string
	for _, r := range rs {
		for id := range r.addrs {
			if e.bump(id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// setNode records whether node n is up: a node DOWN (partitioned, dead)
// serves nothing, so its replicas leave every endpoint while their tasks
// stay in the store. It returns the networks whose endpoints changed.
func (e *endpointTable) setNode(n *api.Node) []string {
	return e.setUp(n.GetId(), n.GetStatus().GetState() != api.NodeStatusState_NODE_STATUS_STATE_DOWN)
}

func (e *endpointTable) removeNode(id string) []string {
	return e.setUp(id, false)
}

func (e *endpointTable) setUp(id string, up bool) []string {
	if e.up[id] == up {
		return nil
	}
	if up {
		e.up[id] = true
	} else {
		delete(e.up, id)
	}
	var ids []string
	for _, r := range e.replicas {
		if r.nodeID == id {
			ids = append(ids, e.bumpAddressed(r)...)
		}
	}
	return ids
}
