package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
)

// Pending reasons the scheduler writes to status.reason.
const (
	ReasonNoSuitableNode      = "no_suitable_node"
	ReasonWaitingOnDependency = "waiting_on_dependency"
)

// write is one task change decided by a batch: an assignment or a new
// pending status. The task object is changed in place; the old values are
// kept to undo the change when its proposal fails.
type write struct {
	task      *api.Task
	oldNodeID string
	oldStatus *api.TaskStatus
	// prev is the index record before a tentative assignment; nil for a
	// status write.
	prev *taskRecord
	// volumes are the volumes the assignment records as living on its
	// node, written before the task in the same proposal; oldVolumes
	// their index entries before, nil for a per-slot volume it creates
	// (volumes.go).
	volumes, oldVolumes []*api.Volume
	// onVolumes names every volume the assigned task mounts: the
	// proposal checks they live on its node. oldTaskVolumes is the
	// task's volumes field before (slot volumes the assignment resolves).
	onVolumes      []string
	oldTaskVolumes []*api.TaskVolume
}

// groupKey collects the pending tasks that share one placement pass: the
// same service at the same spec version.
type groupKey struct {
	serviceID   string
	specVersion uint64
}

// decide places the pending tasks the batch must look at and returns the
// writes to commit. Assignments are entered in the index at once, so that
// every later decision in the batch sees them.
func (s *Scheduler) decide(ix *index) []write {
	ids := ix.fresh
	if ix.recheckAll {
		ids = make(map[string]bool, len(ix.pending))
		for id := range ix.pending {
			ids[id] = true
		}
	}
	ix.fresh, ix.recheckAll = map[string]bool{}, false

	groups := map[groupKey][]*api.Task{}
	for id := range ids {
		t := ix.pending[id]
		if t == nil {
			continue
		}
		k := groupKey{t.GetServiceId(), t.GetSpecVersion()}
		groups[k] = append(groups[k], t)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b groupKey) int {
		return cmp.Or(cmp.Compare(a.serviceID, b.serviceID), cmp.Compare(a.specVersion, b.specVersion))
	})
	var writes []write
	for _, k := range keys {
		writes = s.decideGroup(ix, k.serviceID, groups[k], writes)
	}
	return writes
}

// decideGroup decides the tasks of one service and spec version.
func (s *Scheduler) decideGroup(ix *index, serviceID string, tasks []*api.Task, writes []write) []write {
	slices.SortFunc(tasks, func(a, b *api.Task) int {
		return cmp.Or(cmp.Compare(a.GetSlot(), b.GetSlot()), cmp.Compare(a.GetId(), b.GetId()))
	})
	spec := tasks[0].GetSpec()
	if spec == nil {
		spec = ix.services[serviceID].GetSpec()
	}
	pendAll := func(reason, msg string) []write {
		for _, t := range tasks {
			writes = s.setPending(writes, t, reason, msg)
		}
		return writes
	}
	if msg := waitingOn(ix, spec); msg != "" {
		return pendAll(ReasonWaitingOnDependency, msg)
	}
	p, err := newNeeds(serviceID, spec)
	if err != nil {
		return pendAll(ReasonNoSuitableNode, "no suitable node (invalid placement: "+err.Error()+")")
	}
	if names := api.VolumeNames(spec); len(names) > 0 || api.HasSlotVolumes(spec) {
		return s.decideWithVolumes(ix, serviceID, p, spec, names, tasks, writes)
	}

	var free []*api.Task
	for _, t := range tasks {
		if t.GetNodeId() == "" {
			free = append(free, t)
			continue
		}
		// The orchestrator chose the node (global service, pinned
		// replica): check that it still fits.
		ni := ix.nodes[t.GetNodeId()]
		ex := exUnavailable
		if ni != nil {
			ex = p.check(ni)
		}
		if ex == exNone {
			writes = s.assign(ix, writes, t, ni)
			continue
		}
		var counts exclusionCounts
		counts[ex] = 1
		writes = s.setPending(writes, t, ReasonNoSuitableNode, counts.message(p, 1))
	}
	if len(free) == 0 {
		return writes
	}

	tree := newSpreadTree(p, eligibleNodes(ix, p, ""), ix.held[serviceID])
	var path []*branch
	for i, t := range free {
		var ni *nodeInfo
		ni, path = tree.next(path)
		if ni == nil {
			msg := exclusionMessage(ix, p)
			for _, t := range free[i:] {
				writes = s.setPending(writes, t, ReasonNoSuitableNode, msg)
			}
			break
		}
		writes = s.assign(ix, writes, t, ni)
		tree.placed(path, p.checkRoom(ni) == exNone)
	}
	return writes
}

// eligibleNodes are the nodes p fits, but for node skip ("": none).
func eligibleNodes(ix *index, p *needs, skip string) []*nodeInfo {
	var eligible []*nodeInfo
	for _, ni := range ix.nodes {
		if ni.id != skip && p.check(ni) == exNone {
			eligible = append(eligible, ni)
		}
	}
	return eligible
}

// exclusionMessage runs the filters over every node and says which turned
// how many down.
func exclusionMessage(ix *index, p *needs) string {
	var counts exclusionCounts
	nodes := 0
	for _, ni := range ix.nodes {
		if ni.node == nil {
			continue
		}
		nodes++
		if ex := p.check(ni); ex != exNone {
			counts[ex]++
		}
	}
	return counts.message(p, nodes)
}

// waitingOn returns the pending message when a dependency of spec has no
// RUNNING replica (RUNNING already means healthy for a service with a
// health check), "" when every dependency has one.
func waitingOn(ix *index, spec *api.ServiceSpec) string {
	var missing []string
	for _, name := range spec.GetDependsOn() {
		id, ok := ix.serviceByName[name]
		if !ok || ix.running[id] == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("waiting for a running replica of %s", strings.Join(missing, ", "))
}

// assign sets t to ASSIGNED on ni, enters it in the index as holding ni,
// and records the write.
func (s *Scheduler) assign(ix *index, writes []write, t *api.Task, ni *nodeInfo) []write {
	prev := ix.tasks[t.GetId()]
	w := write{task: t, oldNodeID: t.GetNodeId(), oldStatus: t.GetStatus(), prev: prev, oldTaskVolumes: t.GetVolumes()}
	t.NodeId = ni.id
	t.Status = &api.TaskStatus{
		State:     api.TaskState_TASK_STATE_ASSIGNED,
		Message:   "assigned to node " + placement.Hostname(ni.node),
		Timestamp: timestamppb.New(s.now()),
	}
	rec := recordOf(t) // holds ni from now on
	// Events older than the write this assignment becomes must not bring
	// the task back as pending.
	rec.version = 0
	if prev != nil {
		rec.version = prev.version + 1
	}
	ix.replace(t.GetId(), prev, rec)
	delete(ix.pending, t.GetId())
	return append(writes, w)
}

// setPending records a new pending status for t when the reason changed,
// or when only the message did and the status is older than the message
// interval.
func (s *Scheduler) setPending(writes []write, t *api.Task, reason, msg string) []write {
	old := t.GetStatus()
	now := s.now()
	if old.GetReason() == reason && (old.GetMessage() == msg ||
		now.Sub(old.GetTimestamp().AsTime()) < s.messageInterval) {
		return writes
	}
	w := write{task: t, oldNodeID: t.GetNodeId(), oldStatus: old, oldTaskVolumes: t.GetVolumes()}
	t.Status = &api.TaskStatus{
		State:     api.TaskState_TASK_STATE_PENDING,
		Reason:    reason,
		Message:   msg,
		Timestamp: timestamppb.New(now),
	}
	return append(writes, w)
}
