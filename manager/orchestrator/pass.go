package orchestrator

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// pass works out what the orchestrator should write. It reads through
// tx, which also checks every write as it is recorded and shows the pass
// its own writes; the writes themselves are collected as a plan that
// commit proposes in batches of a reasonable size (the tx is never
// proposed as a whole).
type pass struct {
	tx    *store.Tx
	now   time.Time
	nodes map[string]*api.Node
	load  map[string]int
	// gone holds the ids of tasks this pass deleted.
	gone map[string]bool
	plan plan
	// share is how many tasks of a removed service a pass stops, and
	// the least number of new tasks it creates for one service (it may
	// create as many as the service holds; see the package doc): each
	// next share is planned from a fresh read, which shows a removal or
	// a change made meanwhile.
	share int
	// more holds the services this pass left work to, for the next one.
	more map[string]bool
	// wake holds when a service needs another pass though nothing in the
	// store changes: an update waits for a replica to have run long
	// enough, or for its delay.
	wake map[string]time.Time
	// grace: the cluster's graces for lost nodes (graces).
	grace *nodeGraces
}

func newPass(tx *store.Tx, now time.Time, share int) *pass {
	return &pass{tx: tx, now: now, nodes: map[string]*api.Node{}, load: map[string]int{},
		gone: map[string]bool{}, plan: plan{byID: map[string]*op{}},
		share: max(share, 1), more: map[string]bool{}, wake: map[string]time.Time{}}
}

func (p *pass) node(id string) *api.Node {
	n, ok := p.nodes[id]
	if !ok {
		n = p.tx.GetNode(id)
		p.nodes[id] = n
	}
	return n
}

// nodeLost: the node is gone, or DOWN or PARTITIONED for longer than the
// cluster's grace for that state (docs/adr/0042). UNKNOWN (a new leader
// has not heard from it yet) is not lost.
func (p *pass) nodeLost(id string) bool {
	lost, _ := p.nodeLostAt(id)
	return lost
}

// nodeLostAt is nodeLost, and when a node still within its grace will be
// lost (zero otherwise).
func (p *pass) nodeLostAt(id string) (bool, time.Time) {
	n := p.node(id)
	if n == nil {
		return true, time.Time{}
	}
	var grace time.Duration
	switch n.GetStatus().GetState() {
	case api.NodeStatusState_NODE_STATUS_STATE_DOWN:
		grace = p.graces().down
	case api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED:
		grace = p.graces().partition
	default:
		return false, time.Time{}
	}
	end := n.GetStatus().GetTimestamp().AsTime().Add(grace)
	if !p.now.Before(end) {
		return true, time.Time{}
	}
	return false, end
}

// lost: t has not ended but its node is lost, so it never will by
// report. A task whose node is within its grace asks for a pass when the
// grace ends.
func (p *pass) lost(t *api.Task) bool {
	if terminal(state(t)) || t.GetNodeId() == "" {
		return false
	}
	lost, at := p.nodeLostAt(t.GetNodeId())
	p.wakeAt(t.GetServiceId(), at)
	return lost
}

// nodeGraces is how long the replicas of a DOWN or PARTITIONED node keep
// their slots before they are replaced (docs/adr/0042).
type nodeGraces struct{ down, partition time.Duration }

// graces are the cluster's, read once per pass.
func (p *pass) graces() nodeGraces {
	if p.grace == nil {
		c := p.tx.Cluster()
		p.grace = &nodeGraces{down: api.DownGraceOf(c), partition: api.PartitionGraceOf(c)}
	}
	return *p.grace
}

// nodeLoad is the number of live tasks on a node, of every service.
func (p *pass) nodeLoad(id string) int {
	if id == "" {
		return 0
	}
	n, ok := p.load[id]
	if !ok {
		p.tx.EachTask("", id, func(t *api.Task) bool {
			if live(t) {
				n++
			}
			return true
		})
		p.load[id] = n
	}
	return n
}

func (p *pass) create(t *api.Task, glued bool) error {
	if err := p.tx.Create(t); err != nil {
		return fmt.Errorf("create task %s of service %s slot %d: %w", t.GetId(), t.GetServiceId(), t.GetSlot(), err)
	}
	p.plan.record(opCreate, t, glued)
	return nil
}

func (p *pass) update(t *api.Task) error {
	if err := p.tx.Update(t); err != nil {
		return fmt.Errorf("update task %s: %w", t.GetId(), err)
	}
	p.plan.record(opUpdate, t, false)
	return nil
}

// updateService records a new update status (or spec, for a rollback)
// of a service; at most one per service and pass.
func (p *pass) updateService(s *api.Service) error {
	if err := p.tx.Update(s); err != nil {
		return fmt.Errorf("update service %s: %w", s.GetId(), err)
	}
	p.plan.record(opUpdate, s, false)
	return nil
}

func cloneService(s *api.Service) *api.Service { return proto.CloneOf(s) }

// cloneStatus is a copy of svc's update status to change.
func cloneStatus(svc *api.Service) *api.UpdateStatus {
	if us := svc.GetUpdateStatus(); us != nil {
		return proto.CloneOf(us)
	}
	return &api.UpdateStatus{}
}

func (p *pass) delete(t *api.Task) error {
	if p.gone[t.GetId()] {
		return nil
	}
	if err := p.tx.Delete(t); err != nil {
		return fmt.Errorf("delete task %s: %w", t.GetId(), err)
	}
	p.plan.record(opDelete, t, false)
	p.gone[t.GetId()] = true
	return nil
}

// origin says why a task is created.
type origin int

const (
	// fresh: a slot, or an eligible node, has no task.
	fresh origin = iota
	// replacement: the task replaces one just stopped (node down, rolling
	// update); it is no restart attempt.
	replacement
	// restart: the restart supervisor replaces a task that ended; it starts
	// after the policy's delay.
	restart
)

// spawn creates a task of svc in slot (on nodeID for global services).
// A replacement is committed together with the write that stopped the
// task it replaces.
func (p *pass) spawn(svc *api.Service, slot uint64, nodeID string, why origin) (*api.Task, error) {
	return p.spawnAs(svc, slot, nodeID, why, "")
}

// spawnAs is spawn for a task that takes over from the task replaces,
// which keeps running meanwhile (a drain).
func (p *pass) spawnAs(svc *api.Service, slot uint64, nodeID string, why origin, replaces string) (*api.Task, error) {
	var notBefore *time.Time
	if why == restart {
		nb := p.now.Add(restartDelay(svc.GetSpec().GetRestart()))
		notBefore = &nb
	}
	t, err := newTask(svc, slot, nodeID, p.now, notBefore)
	if err != nil {
		return nil, err
	}
	t.Replaces = replaces
	return t, p.create(t, why != fresh)
}

// stop tells t to stop. A task no agent has heard of is deleted instead.
func (p *pass) stop(t *api.Task) error {
	if neverAssigned(t) {
		return p.delete(t)
	}
	if !shutdown(t) {
		return nil
	}
	return p.update(t)
}

// retire stops t and deletes it once terminal: its slot is being emptied,
// so it is no history worth keeping.
func (p *pass) retire(t *api.Task) error {
	if terminal(state(t)) {
		return p.delete(t)
	}
	return p.stop(t)
}

// orphan marks a task whose node is lost: it will not report again. It
// is told to stop, should its node come back.
func (p *pass) orphan(t *api.Task) error {
	msg, why := "node down", "node_down"
	if p.node(t.GetNodeId()).GetStatus().GetState() == api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED {
		msg, why = fmt.Sprintf("node partitioned from the managers for longer than the partition grace (%s)", p.graces().partition), "node_partitioned"
	}
	t.DesiredState = api.TaskState_TASK_STATE_SHUTDOWN
	t.Status = &api.TaskStatus{
		State:     api.TaskState_TASK_STATE_ORPHANED,
		Message:   msg,
		Reason:    why,
		Timestamp: timestamppb.New(p.now),
		ExitCode:  t.GetStatus().GetExitCode(),
	}
	return p.update(t)
}
