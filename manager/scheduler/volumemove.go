package scheduler

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// Volume moves (docs/adr/0064-volume-move.md). A replica of a service
// whose volume_move is MOVE, pending because its volume's node cannot
// take it for a reason the operator chose (the node is drained, or the
// service's placement excludes it) while that node is up, asks for the
// volume to move: the scheduler picks the destination as it would place
// the replica, ignoring the volume's node, and writes Volume.move
// (STOPPING) with the replica's pending status. The volume mover
// (manager/volumemove) does the rest; the replica waits, volume_moving
// with the copy's progress, until the volume lives on its new node, where
// it is then placed as any replica of a placed volume.

// movable: a replica of p whose volume lives on ni, which turned it down
// with ex, may move the volume away.
func movable(ni *nodeInfo, ex exclusion) bool {
	if ni == nil || ni.node == nil || ni.node.GetStatus().GetState() != api.NodeStatusState_NODE_STATUS_STATE_READY {
		return false // the data cannot be read off a node that is not up
	}
	return ni.node.GetAvailability() == api.NodeAvailability_NODE_AVAILABILITY_DRAIN ||
		ex == exConstraints || ex == exPin
}

// moveVolumes decides t, a replica of spec whose volumes vols live on
// home, which cannot take it (ex): waiting on a move under way, asking
// for one, or neither (handled false: the replica waits for home).
func (s *Scheduler) moveVolumes(ix *index, writes []write, serviceID string, p *needs, spec *api.ServiceSpec, vols []taskVolume, home string, ex exclusion, t *api.Task) ([]write, bool) {
	// The service's policy as it is now: a change of it alone replaces no
	// replica (rollout.Replaces), so a pending one carries the old.
	policy := spec.GetVolumeMove()
	if svc := ix.services[serviceID]; svc != nil {
		policy = svc.GetSpec().GetVolumeMove()
	}
	if policy != api.VolumeMovePolicy_VOLUME_MOVE_POLICY_MOVE {
		return writes, false
	}
	var onHome []*api.Volume
	for _, tv := range vols {
		v := ix.volumes[tv.name]
		if v == nil || v.GetNodeId() != home {
			continue
		}
		if m := v.GetMove(); m != nil {
			return s.waitMove(writes, ix, t, v), true
		}
		if v.GetSpec().GetOptions()[api.VolumeOptType] == api.VolumeTypeNone {
			return writes, false // a bind of a node's path does not move
		}
		onHome = append(onHome, v)
	}
	if len(onHome) == 0 || !movable(ix.nodes[home], ex) {
		return writes, false
	}
	to, _ := newSpreadTree(p, eligibleNodes(ix, p, home), ix.held[serviceID]).next(nil)
	if to == nil {
		return writes, false
	}
	w := write{task: t, oldNodeID: t.GetNodeId(), oldStatus: t.GetStatus(), oldTaskVolumes: t.GetVolumes()}
	for _, v := range onHome {
		moving := proto.CloneOf(v)
		moving.Move = &api.VolumeMove{
			FromNode: home, ToNode: to.id, State: api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING,
			FromGeneration: v.GetGeneration(),
		}
		ix.volumes[v.GetSpec().GetName()] = moving
		w.volumes = append(w.volumes, moving)
		w.oldVolumes = append(w.oldVolumes, v)
	}
	t.Status = &api.TaskStatus{
		State: api.TaskState_TASK_STATE_PENDING, Reason: reason.VolumeMoving, Timestamp: timestamppb.New(s.now()),
		Message: fmt.Sprintf("volume %s moves from node %s to node %s: stopping its replicas",
			onHome[0].GetSpec().GetName(), nodeName(ix, home), nodeName(ix, to.id)),
	}
	return append(writes, w), true
}

// waitMove keeps t pending while v moves, saying how far the move is.
func (s *Scheduler) waitMove(writes []write, ix *index, t *api.Task, v *api.Volume) []write {
	m := v.GetMove()
	name, from, to := v.GetSpec().GetName(), nodeName(ix, m.GetFromNode()), nodeName(ix, m.GetToNode())
	switch m.GetState() {
	case api.VolumeMoveState_VOLUME_MOVE_STATE_FAILED:
		return s.setPending(writes, t, reason.VolumeMoveFailed, fmt.Sprintf(
			"volume %s: copy from node %s to node %s failed (attempt %d), trying again: %s", name, from, to, m.GetAttempts(), m.GetError()))
	case api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING:
		return s.setPending(writes, t, reason.VolumeMoving, fmt.Sprintf(
			"volume %s moves from node %s to node %s: %s", name, from, to, api.VolumeMoveProgress(m)))
	case api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING:
		return s.setPending(writes, t, reason.VolumeMoving, fmt.Sprintf(
			"volume %s moves from node %s to node %s: stopping its replicas", name, from, to))
	}
	return s.setPending(writes, t, ReasonVolumeUnavailable, fmt.Sprintf(
		"volume %s lives on node %s, which cannot take the replica; its old copy on node %s is still to be deleted", name, nodeName(ix, v.GetNodeId()), from))
}
