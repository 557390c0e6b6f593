package volumemove

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// fixture: volume db on node a, moving to node b (STOPPING), with its
// replica t1 running on a.
func fixture(t *testing.T) (*store.Store, *Mover) {
	t.Helper()
	st, _ := storetest.NewWithProposer(t)
	spec := &api.ServiceSpec{Name: "db", Image: "busybox", VolumeMove: api.VolumeMovePolicy_VOLUME_MOVE_POLICY_MOVE,
		Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db", Target: "/data"}}}
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		for _, n := range []*api.Node{
			{Id: "a", Hostname: "a", Address: "10.0.0.1:7000", Availability: api.NodeAvailability_NODE_AVAILABILITY_DRAIN},
			{Id: "b", Hostname: "b", Address: "10.0.0.2:7000"},
		} {
			if err := tx.Create(n); err != nil {
				return err
			}
		}
		if err := tx.Create(&api.Volume{Id: "v1", Spec: &api.VolumeSpec{Name: "db", Driver: "local"}, NodeId: "a",
			Move: &api.VolumeMove{FromNode: "a", ToNode: "b", State: api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING}}); err != nil {
			return err
		}
		return tx.Create(&api.Task{Id: "t1", ServiceId: "s", NodeId: "a", Slot: 1, Spec: spec,
			DesiredState: api.TaskState_TASK_STATE_RUNNING, Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, New(st, slog.New(slog.DiscardHandler))
}

func read(st *store.Store) (v *api.Volume, a, b *api.Node, t1 *api.Task) {
	st.View(func(tx store.ReadTx) {
		v, a, b, t1 = tx.GetVolume("v1"), tx.GetNode("a"), tx.GetNode("b"), tx.GetTask("t1")
	})
	return
}

func pass(t *testing.T, m *Mover) {
	t.Helper()
	if err := m.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func setTask(t *testing.T, st *store.Store, task *api.Task) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		if tx.GetTask(task.GetId()) == nil {
			return tx.Create(task)
		}
		return tx.Update(task)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func report(t *testing.T, st *store.Store, node string, r *api.ReportVolumeMoveRequest) {
	t.Helper()
	if err := Report(context.Background(), st, node, r, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestMoveCopiesOnlyOnceTheOldReplicaStopped(t *testing.T) {
	st, m := fixture(t)
	pass(t, m)
	v, a, b, t1 := read(st)
	if t1.GetDesiredState() != api.TaskState_TASK_STATE_SHUTDOWN {
		t.Fatalf("the old replica was not stopped: desired %v", t1.GetDesiredState())
	}
	if v.GetMove().GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING || len(a.GetVolumeMoves())+len(b.GetVolumeMoves()) > 0 {
		t.Fatalf("the copy was ordered while the old replica runs: %v, orders %v %v", v.GetMove(), a.GetVolumeMoves(), b.GetVolumeMoves())
	}
	// A report before any order changes nothing.
	report(t, st, "b", &api.ReportVolumeMoveRequest{VolumeId: "v1", Generation: 1, Done: true})
	if v, _, _, _ := read(st); v.GetNodeId() != "a" {
		t.Fatalf("a copy reported done before it was ordered moved the volume to %s", v.GetNodeId())
	}
	t1.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_SHUTDOWN}
	setTask(t, st, t1)
	pass(t, m)
	v, a, b, _ = read(st)
	if v.GetMove().GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING {
		t.Fatalf("move %v once the replica stopped, want COPYING", v.GetMove())
	}
	for _, n := range []*api.Node{a, b} {
		if len(n.GetVolumeMoves()) != 1 || n.GetVolumeMoves()[0].GetToNode() != "b" || n.GetVolumeMoves()[0].GetGeneration() != 1 ||
			n.GetVolumeMoves()[0].GetFromAddress() != "10.0.0.1:7000" {
			t.Fatalf("node %s orders %v", n.GetId(), n.GetVolumeMoves())
		}
	}
}

// copying takes the fixture to COPYING.
func copying(t *testing.T) (*store.Store, *Mover) {
	st, m := fixture(t)
	pass(t, m)
	_, _, _, t1 := read(st)
	t1.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_SHUTDOWN}
	setTask(t, st, t1)
	pass(t, m)
	return st, m
}

func TestMoveFailureLeavesTheVolumeWhereItWas(t *testing.T) {
	st, _ := copying(t)
	report(t, st, "b", &api.ReportVolumeMoveRequest{VolumeId: "v1", Generation: 1, BytesDone: 10, BytesTotal: 100})
	report(t, st, "c", &api.ReportVolumeMoveRequest{VolumeId: "v1", Generation: 1, Done: true}) // not the destination
	report(t, st, "b", &api.ReportVolumeMoveRequest{VolumeId: "v1", Generation: 1, Error: "sha256 mismatch"})
	v, a, b, _ := read(st)
	if v.GetNodeId() != "a" || v.GetGeneration() != 0 {
		t.Fatalf("after a failure the volume is on %s generation %d, want a, 0", v.GetNodeId(), v.GetGeneration())
	}
	if m := v.GetMove(); m.GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_FAILED || m.GetError() != "sha256 mismatch" || m.GetAttempts() != 1 {
		t.Fatalf("move %v", m)
	}
	if len(a.GetVolumeMoves()) != 1 || len(b.GetVolumeMoves()) != 1 || len(a.GetRemovedVolumes()) != 0 {
		t.Fatalf("a failure changed the nodes: %v %v %v", a.GetVolumeMoves(), b.GetVolumeMoves(), a.GetRemovedVolumes())
	}
	// The destination tries again: progress makes it COPYING again.
	report(t, st, "b", &api.ReportVolumeMoveRequest{VolumeId: "v1", Generation: 1, BytesDone: 50, BytesTotal: 100})
	if v, _, _, _ := read(st); v.GetMove().GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING || v.GetMove().GetBytesDone() != 50 {
		t.Fatalf("move %v after a new attempt's progress", v.GetMove())
	}
}

func TestMoveDeletesTheOldCopyOnlyOnceTheNewReplicaRuns(t *testing.T) {
	st, m := copying(t)
	report(t, st, "b", &api.ReportVolumeMoveRequest{VolumeId: "v1", Generation: 1, Done: true})
	v, a, b, t1 := read(st)
	if v.GetNodeId() != "b" || v.GetGeneration() != 1 || v.GetMove().GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_CLEANUP {
		t.Fatalf("verified copy: volume on %s generation %d, move %v", v.GetNodeId(), v.GetGeneration(), v.GetMove())
	}
	if len(a.GetVolumeMoves())+len(b.GetVolumeMoves()) > 0 {
		t.Fatalf("orders kept after the copy: %v %v", a.GetVolumeMoves(), b.GetVolumeMoves())
	}
	t2 := &api.Task{Id: "t2", ServiceId: "s", NodeId: "b", Slot: 1, Spec: t1.GetSpec(),
		DesiredState: api.TaskState_TASK_STATE_RUNNING, Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_STARTING}}
	setTask(t, st, t2)
	pass(t, m)
	if _, a, _, _ := read(st); len(a.GetRemovedVolumes()) != 0 {
		t.Fatalf("old copy removed before the new replica runs: %v", a.GetRemovedVolumes())
	}
	st.View(func(tx store.ReadTx) { t2 = tx.GetTask("t2") })
	t2.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}
	setTask(t, st, t2)
	pass(t, m)
	v, a, _, _ = read(st)
	if r := a.GetRemovedVolumes(); len(r) != 1 || r[0].GetId() != "v1" || r[0].GetGeneration() != 0 {
		t.Fatalf("old node's removed volumes %v, want v1 generation 0", r)
	}
	if v.GetMove() != nil || v.GetNodeId() != "b" {
		t.Fatalf("after the move: %v", v)
	}
}
