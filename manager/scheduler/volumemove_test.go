package scheduler

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Under volume_move MOVE, a replica whose volume lives on a drained node
// asks for the volume to move to the node it would be placed on, in its
// pending write; it is placed nowhere meanwhile. A down node's volume
// does not move (its data cannot be read), nor a volume under PIN.
func TestVolumeMoveIsAskedForADrainedNode(t *testing.T) {
	spec := volumeSpec("db", "db-data")
	spec.VolumeMove = api.VolumeMovePolicy_VOLUME_MOVE_POLICY_MOVE
	drained := readyNode("b1")
	drained.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN
	task := pendingTasks(spec, 1)[0]
	writes := testScheduler().decide(testIndex(readyNode("a1"), drained, service(spec), volume("db-data", "b1"), task))
	if len(writes) != 1 {
		t.Fatalf("%d writes, want 1", len(writes))
	}
	w := writes[0]
	if st := w.task.GetStatus(); st.GetState() != api.TaskState_TASK_STATE_PENDING || st.GetReason() != reason.VolumeMoving ||
		!strings.Contains(st.GetMessage(), "volume db-data moves from node host-b1 to node host-a1") {
		t.Fatalf("task %v, want pending volume_moving naming both nodes", st)
	}
	if len(w.volumes) != 1 {
		t.Fatalf("write carries %d volumes, want the moving one", len(w.volumes))
	}
	m := w.volumes[0].GetMove()
	if w.volumes[0].GetNodeId() != "b1" || m.GetFromNode() != "b1" || m.GetToNode() != "a1" || m.GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING {
		t.Fatalf("volume %v: want on b1 still, moving to a1, STOPPING", w.volumes[0])
	}

	// A move under way: the replica waits with its progress.
	moving := volume("db-data", "b1")
	moving.Move = &api.VolumeMove{FromNode: "b1", ToNode: "a1", State: api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING, BytesDone: 1 << 20, BytesTotal: 4 << 20}
	out := decideOnce(t, testIndex(readyNode("a1"), drained, service(spec), moving, pendingTasks(spec, 1)[0]))
	if msg := out.pending["db.001"]; !strings.HasPrefix(msg, reason.VolumeMoving) || !strings.Contains(msg, "copied 1.0 MiB of 4.0 MiB") {
		t.Errorf("pending %q, want the copy's progress", msg)
	}
	moving.Move.State, moving.Move.Error, moving.Move.Attempts = api.VolumeMoveState_VOLUME_MOVE_STATE_FAILED, "dial: refused", 2
	out = decideOnce(t, testIndex(readyNode("a1"), drained, service(spec), moving, pendingTasks(spec, 1)[0]))
	if msg := out.pending["db.001"]; !strings.HasPrefix(msg, reason.VolumeMoveFailed) || !strings.Contains(msg, "dial: refused") {
		t.Errorf("pending %q, want volume_move_failed with the error", msg)
	}

	down := readyNode("b1")
	down.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN
	pin := volumeSpec("pin", "db-data")
	for name, objs := range map[string][]store.Object{
		"down":   {readyNode("a1"), down, service(spec), volume("db-data", "b1"), pendingTasks(spec, 1)[0]},
		"pinned": {readyNode("a1"), drained, service(pin), volume("db-data", "b1"), pendingTasks(pin, 1)[0]},
	} {
		for _, w := range testScheduler().decide(testIndex(objs...)) {
			if r := w.task.GetStatus().GetReason(); r != ReasonVolumeUnavailable || len(w.volumes) > 0 {
				t.Errorf("%s: %s %v with volumes %v, want volume_unavailable and no move", name, w.task.GetId(), w.task.GetStatus(), w.volumes)
			}
		}
	}
}

// A placement constraint that excludes the volume's node moves the volume
// too (service update --constraint-add, or --force after a label change).
func TestVolumeMoveIsAskedWhenConstraintsExcludeTheNode(t *testing.T) {
	spec := volumeSpec("db", "db-data")
	spec.VolumeMove = api.VolumeMovePolicy_VOLUME_MOVE_POLICY_MOVE
	spec.Placement = &api.Placement{Constraints: []string{"node.hostname!=host-b1"}}
	writes := testScheduler().decide(testIndex(readyNode("a1"), readyNode("b1"), service(spec), volume("db-data", "b1"), pendingTasks(spec, 1)[0]))
	if len(writes) != 1 || len(writes[0].volumes) != 1 || writes[0].volumes[0].GetMove().GetToNode() != "a1" {
		t.Fatalf("writes %v, want db-data moving to a1", writes)
	}
}
