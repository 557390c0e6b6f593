package scheduler

import (
	"maps"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// nodeInfo is what the scheduler knows of one node: the node object (nil
// when only tasks name it) and the tally of the tasks that hold it.
type nodeInfo struct {
	id   string
	node *api.Node
	// available and capacity are read from node when it is set, so the
	// per-node filter pass touches only this struct for most nodes.
	available bool
	capacity  resources
	// containerSlots bounds containers (0: no bound), containers counts
	// the containerd replicas held.
	containerSlots int
	containers     int
	tasks          int
	byService      map[string]int
	reserved       resources
	ports          map[portKey]int
}

// taskRecord is the part of a task the index keeps for every task.
type taskRecord struct {
	version     uint64
	serviceID   string
	nodeID      string
	specVersion uint64
	// holds: counted in nodeID's tally (ASSIGNED up to RUNNING).
	holds   bool
	running bool
	pending bool
	reserve resources
	ports   []portKey
	// container: a containerd replica, which takes a container address.
	container bool
}

// index is the scheduler's in-memory view, kept from store events. It is
// owned by the scheduler's loop goroutine.
type index struct {
	nodes         map[string]*nodeInfo
	tasks         map[string]*taskRecord
	services      map[string]*api.Service
	serviceByName map[string]string
	running       map[string]int // service id → RUNNING tasks
	held          map[string]int // service id → tasks holding a node
	// pending holds the tasks waiting for a decision, as last read.
	pending map[string]*api.Task
	// fresh are pending tasks not decided since they became pending;
	// recheckAll asks for every pending task to be decided again because
	// something a past decision relied on changed.
	fresh      map[string]bool
	recheckAll bool
	// volumes are the named volumes by name, with the node each lives on
	// (volumes.go).
	volumes map[string]*api.Volume
	// specs lets the pending tasks of a service share their spec: each
	// comes from its own event, with its own copy, and 100 000 pending
	// replicas held 2 KB each for it. Nothing here changes a task's spec.
	specs *api.Specs
}

func newIndex() *index {
	return &index{
		nodes:         map[string]*nodeInfo{},
		tasks:         map[string]*taskRecord{},
		services:      map[string]*api.Service{},
		serviceByName: map[string]string{},
		running:       map[string]int{},
		held:          map[string]int{},
		pending:       map[string]*api.Task{},
		fresh:         map[string]bool{},
		volumes:       map[string]*api.Volume{},
		specs:         api.NewSpecs(),
	}
}

// load fills an empty index from a store view.
func (ix *index) load(tx store.ReadTx) {
	for _, n := range tx.ListNodes() {
		ix.setNode(n)
	}
	for _, s := range tx.ListServices() {
		ix.setService(s)
	}
	for _, v := range tx.ListVolumes() {
		ix.setVolume(v)
	}
	// Shallow copies: the index keeps pending tasks, whose fields a
	// decision sets, and never changes a message of one in place.
	tx.EachTask("", "", func(t *api.Task) bool {
		ix.setTask(t.Shallow())
		return true
	})
	ix.recheckAll = true
}

// apply folds one store event into the index.
func (ix *index) apply(e store.Event) {
	switch o := e.Object.(type) {
	case *api.Node:
		if e.Kind == store.EventDelete {
			ix.deleteNode(o.GetId())
		} else {
			ix.setNode(o)
		}
	case *api.Service:
		if e.Kind == store.EventDelete {
			ix.deleteService(o.GetId())
		} else {
			ix.setService(o)
		}
	case *api.Task:
		if e.Kind == store.EventDelete {
			ix.deleteTask(o.GetId(), e.Index)
		} else {
			ix.setTask(o)
		}
	case *api.Volume:
		if e.Kind == store.EventDelete {
			ix.deleteVolume(o)
		} else {
			ix.setVolume(o)
		}
	}
}

func (ix *index) nodeInfo(id string) *nodeInfo {
	ni := ix.nodes[id]
	if ni == nil {
		ni = &nodeInfo{id: id, byService: map[string]int{}, ports: map[portKey]int{}}
		ix.nodes[id] = ni
	}
	return ni
}

func (ix *index) setNode(n *api.Node) {
	ni := ix.nodeInfo(n.GetId())
	if ni.node == nil || schedulingChanged(ni.node, n) {
		ix.recheckAll = true
	}
	ni.node = n
	ni.available = placement.Available(n)
	ni.capacity = resourcesOf(n.GetDescription().GetResources())
	ni.containerSlots = int(n.GetDescription().GetContainerSlots())
}

// schedulingChanged reports whether a node update changes anything a
// filter or the spread reads; heartbeat-only updates do not.
func schedulingChanged(a, b *api.Node) bool {
	return a.GetStatus().GetState() != b.GetStatus().GetState() ||
		a.GetAvailability() != b.GetAvailability() ||
		a.GetRole() != b.GetRole() ||
		a.GetHostname() != b.GetHostname() ||
		!maps.Equal(a.GetLabels(), b.GetLabels()) ||
		!proto.Equal(a.GetDescription(), b.GetDescription())
}

func (ix *index) deleteNode(id string) {
	ni := ix.nodes[id]
	if ni == nil {
		return
	}
	ni.node, ni.available = nil, false
	if ni.tasks == 0 {
		delete(ix.nodes, id)
	}
	ix.recheckAll = true
}

func (ix *index) setService(s *api.Service) {
	if old := ix.services[s.GetId()]; old != nil {
		if old.GetSpec().GetName() == s.GetSpec().GetName() {
			ix.services[s.GetId()] = s
			// The service's volume_move decides for its pending replicas,
			// whatever spec they carry (volumemove.go).
			if old.GetSpec().GetVolumeMove() != s.GetSpec().GetVolumeMove() {
				ix.recheckAll = true
			}
			return
		}
		delete(ix.serviceByName, old.GetSpec().GetName())
	}
	ix.services[s.GetId()] = s
	ix.serviceByName[s.GetSpec().GetName()] = s.GetId()
	ix.recheckAll = true // a dependency may now exist under this name
}

func (ix *index) deleteService(id string) {
	if old := ix.services[id]; old != nil {
		delete(ix.serviceByName, old.GetSpec().GetName())
		delete(ix.services, id)
		ix.specs.Forget(id)
		ix.recheckAll = true
	}
}

// isPending reports whether t waits for the scheduler.
func isPending(t *api.Task) bool {
	return t.GetStatus().GetState() == api.TaskState_TASK_STATE_PENDING &&
		t.GetDesiredState() <= api.TaskState_TASK_STATE_RUNNING
}

// holdsNode reports whether t counts against its node's resources, ports
// and load: from ASSIGNED until it reaches a terminal state.
func holdsNode(t *api.Task) bool {
	s := t.GetStatus().GetState()
	return t.GetNodeId() != "" && s >= api.TaskState_TASK_STATE_ASSIGNED && s <= api.TaskState_TASK_STATE_RUNNING
}

// setTask records t as the latest content of its task. A task older than
// the one recorded (an event queued before a re-read) is ignored.
func (ix *index) setTask(t *api.Task) {
	old := ix.tasks[t.GetId()]
	if old != nil && t.GetMeta().GetVersion() < old.version {
		return
	}
	rec := recordOf(t)
	ix.replace(t.GetId(), old, rec)
	if rec.pending {
		ix.specs.Share(t)
		ix.pending[t.GetId()] = t
		if old == nil || !old.pending || old.nodeID != rec.nodeID || old.specVersion != rec.specVersion {
			ix.fresh[t.GetId()] = true
		}
	} else {
		delete(ix.pending, t.GetId())
		delete(ix.fresh, t.GetId())
	}
}

// recordOf is the index record of t as it stands.
func recordOf(t *api.Task) *taskRecord {
	rec := &taskRecord{
		version:     t.GetMeta().GetVersion(),
		serviceID:   t.GetServiceId(),
		nodeID:      t.GetNodeId(),
		specVersion: t.GetSpecVersion(),
		holds:       holdsNode(t),
		running:     t.GetStatus().GetState() == api.TaskState_TASK_STATE_RUNNING,
		pending:     isPending(t),
	}
	if rec.holds {
		rec.reserve = resourcesOf(t.GetSpec().GetReservations())
		rec.ports = publishedPorts(t.GetSpec())
		rec.container = t.GetSpec().GetImage() != ""
	}
	return rec
}

func (ix *index) deleteTask(id string, index uint64) {
	old := ix.tasks[id]
	if old == nil || (index != 0 && index < old.version) {
		return
	}
	ix.replace(id, old, nil)
	delete(ix.tasks, id)
	delete(ix.pending, id)
	delete(ix.fresh, id)
}

// replace moves task id's contribution to the tallies from old to rec
// (either may be nil) and stores rec.
func (ix *index) replace(id string, old, rec *taskRecord) {
	if old != nil {
		if old.holds {
			ix.release(old)
			if rec == nil || !rec.holds || rec.nodeID != old.nodeID {
				ix.recheckAll = true // room was freed
			}
		}
		if old.running {
			ix.running[old.serviceID]--
			if ix.running[old.serviceID] == 0 {
				delete(ix.running, old.serviceID)
			}
		}
	}
	if rec == nil {
		return
	}
	if rec.holds {
		ix.hold(rec)
	}
	if rec.running {
		if ix.running[rec.serviceID] == 0 {
			ix.recheckAll = true // a dependency may now be met
		}
		ix.running[rec.serviceID]++
	}
	ix.tasks[id] = rec
}

func (ix *index) hold(rec *taskRecord) {
	ix.held[rec.serviceID]++
	ni := ix.nodeInfo(rec.nodeID)
	ni.tasks++
	ni.byService[rec.serviceID]++
	ni.reserved.cpu += rec.reserve.cpu
	ni.reserved.mem += rec.reserve.mem
	if rec.container {
		ni.containers++
	}
	for _, p := range rec.ports {
		ni.ports[p]++
	}
}

func (ix *index) release(rec *taskRecord) {
	if ix.held[rec.serviceID]--; ix.held[rec.serviceID] <= 0 {
		delete(ix.held, rec.serviceID)
	}
	ni := ix.nodes[rec.nodeID]
	if ni == nil {
		return
	}
	ni.tasks--
	if ni.byService[rec.serviceID]--; ni.byService[rec.serviceID] <= 0 {
		delete(ni.byService, rec.serviceID)
	}
	ni.reserved.cpu -= rec.reserve.cpu
	ni.reserved.mem -= rec.reserve.mem
	if rec.container {
		ni.containers--
	}
	for _, p := range rec.ports {
		if ni.ports[p]--; ni.ports[p] <= 0 {
			delete(ni.ports, p)
		}
	}
	if ni.tasks == 0 && ni.node == nil {
		delete(ix.nodes, rec.nodeID)
	}
}
