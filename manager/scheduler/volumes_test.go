package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// volumeSpec is a service mounting the named volumes at /data/NAME.
func volumeSpec(name string, volumes ...string) *api.ServiceSpec {
	spec := imageSpec(name)
	for _, v := range volumes {
		spec.Mounts = append(spec.Mounts, &api.Mount{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: v, Target: "/data/" + v})
	}
	return spec
}

func volume(name, node string) *api.Volume {
	return &api.Volume{Id: "vol-" + name, Meta: &api.Meta{}, NodeId: node, Spec: &api.VolumeSpec{Name: name, Driver: "local"}}
}

// The first replica using an unplaced volume places it: every replica of
// the batch goes to that one node, and the write records the volume
// there with the first assignment only.
func TestVolumeFirstPlacementPinsIt(t *testing.T) {
	spec := volumeSpec("db", "db-data")
	objs := []store.Object{readyNode("a1"), readyNode("b1"), readyNode("c1"), service(spec), volume("db-data", "")}
	ix := testIndex(append(objs, tasksAsObjects(pendingTasks(spec, 3))...)...)
	writes := testScheduler().decide(ix)
	if len(writes) != 3 {
		t.Fatalf("%d writes; want 3 assignments", len(writes))
	}
	home := writes[0].task.GetNodeId()
	placed := 0
	for _, w := range writes {
		if w.task.GetStatus().GetState() != api.TaskState_TASK_STATE_ASSIGNED || w.task.GetNodeId() != home {
			t.Errorf("%s: %v on %q; want assigned to %s with the others", w.task.GetId(), w.task.GetStatus(), w.task.GetNodeId(), home)
		}
		for _, v := range w.volumes {
			placed++
			if v.GetNodeId() != home || v.GetPlacedAt() == nil || v.GetSpec().GetName() != "db-data" {
				t.Errorf("write places %v; want db-data on %s with a time", v, home)
			}
		}
	}
	if placed != 1 || len(writes[0].volumes) != 1 {
		t.Errorf("the volume is placed by %d writes; want by the first only", placed)
	}
}

// A placed volume's replicas go to its node only, whatever the load; when
// that node cannot take them (down, drained, paused, full) they wait
// with volume_unavailable, naming the volume and the node, and no other
// node is chosen.
func TestVolumeAffinity(t *testing.T) {
	spec := volumeSpec("db", "db-data")
	tasks := tasksAsObjects(pendingTasks(spec, 2))
	busy := imageSpec("busy")
	base := func(b1 *api.Node) []store.Object {
		objs := []store.Object{readyNode("a1"), b1, service(spec), service(busy), volume("db-data", "b1"),
			runningTask("busy.1", busy, "b1"), runningTask("busy.2", busy, "b1")}
		return append(objs, tasks...)
	}
	out := decideOnce(t, testIndex(base(readyNode("b1"))...))
	if out.perNode()["b1"] != 2 || len(out.pending) != 0 {
		t.Fatalf("placed %v; want both replicas on b1, where the volume lives", out)
	}

	down := readyNode("b1")
	down.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN
	drained := readyNode("b1")
	drained.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN
	paused := readyNode("b1")
	paused.Availability = api.NodeAvailability_NODE_AVAILABILITY_PAUSE
	for _, tc := range []struct {
		name string
		b1   *api.Node
		says string
	}{
		{"down", down, "volume db-data lives on node host-b1, which is down: the replica waits for that node"},
		{"drained", drained, "which is drained"},
		{"paused", paused, "which is paused"},
	} {
		out := decideOnce(t, testIndex(base(tc.b1)...))
		if len(out.node) != 0 || len(out.pending) != 2 {
			t.Fatalf("%s: %v; want both pending, none placed elsewhere", tc.name, out)
		}
		for id, msg := range out.pending {
			if !strings.HasPrefix(msg, ReasonVolumeUnavailable+": ") || !strings.Contains(msg, tc.says) {
				t.Errorf("%s: %s pending %q; want volume_unavailable saying %q", tc.name, id, msg, tc.says)
			}
		}
	}

	// Room runs out on b1: the replica waits for room there.
	big := volumeSpec("big", "db-data")
	big.Reservations = &api.Resources{MemoryBytes: 8 * gib}
	out = decideOnce(t, testIndex(readyNode("a1"), readyNode("b1"), service(big), volume("db-data", "b1"), pendingTasks(big, 1)[0]))
	if msg := out.pending["big.001"]; !strings.Contains(msg, "lives on node host-b1, which is a node with insufficient memory") {
		t.Errorf("pending %q; want the volume's node named short of memory", msg)
	}

	// Two volumes on two nodes: no node has both.
	both := volumeSpec("both", "db-data", "logs")
	out = decideOnce(t, testIndex(readyNode("a1"), readyNode("b1"), service(both), volume("db-data", "b1"), volume("logs", "a1"), pendingTasks(both, 1)[0]))
	if msg := out.pending["both.001"]; !strings.Contains(msg, "volumes db-data and logs live on different nodes (host-b1, host-a1)") {
		t.Errorf("pending %q; want the two volumes' nodes named", msg)
	}
	// A volume the scheduler does not know (removed meanwhile).
	out = decideOnce(t, testIndex(readyNode("a1"), service(spec), pendingTasks(spec, 1)[0]))
	if msg := out.pending["db.001"]; !strings.Contains(msg, "volume db-data does not exist") {
		t.Errorf("pending %q; want the missing volume named", msg)
	}
}

// Against a store: the volume's node is recorded in the proposal that
// places its first replica; a later replica, with that node down, waits
// volume_unavailable and goes to no other node; back up, the node takes
// it.
func TestRunRecordsVolumeNodeAndWaitsForIt(t *testing.T) {
	st := storetest.New(t)
	spec := volumeSpec("db", "db-data")
	storetest.Create(t, st, readyNode("a1"), readyNode("b1"), service(spec), volume("db-data", ""))
	startScheduler(t, st)

	first := pendingTasks(spec, 1)[0]
	storetest.Create(t, st, first)
	var home string
	waitfor.Holds(t, 10*time.Second, "db.001 assigned and db-data placed on its node", viewed(st, func(tx store.ReadTx) bool {
		task := tx.GetTask("db.001")
		home = task.GetNodeId()
		return task.GetStatus().GetState() == api.TaskState_TASK_STATE_ASSIGNED &&
			tx.FindVolumeByName("db-data").GetNodeId() == home
	}, func(tx store.ReadTx) string {
		return describeTasks(tx) + " volume " + tx.FindVolumeByName("db-data").String()
	}))
	st.View(func(tx store.ReadTx) {
		// One write placed both: the same raft index stamped them.
		if tv, vv := tx.GetTask("db.001").GetMeta().GetVersion(), tx.FindVolumeByName("db-data").GetMeta().GetVersion(); tv != vv {
			t.Errorf("task written at %d, volume at %d; want one proposal", tv, vv)
		}
	})

	setNodeState(t, st, home, api.NodeStatusState_NODE_STATUS_STATE_DOWN)
	second := pendingTasks(spec, 2)[1]
	storetest.Create(t, st, second)
	waitfor.Holds(t, 10*time.Second, "db.002 pending volume_unavailable", viewed(st, func(tx store.ReadTx) bool {
		s, node, r := taskState(tx, "db.002")
		return s == api.TaskState_TASK_STATE_PENDING && node == "" && r == ReasonVolumeUnavailable
	}, describeTasks))
	st.View(func(tx store.ReadTx) {
		msg := tx.GetTask("db.002").GetStatus().GetMessage()
		if !strings.Contains(msg, "volume db-data lives on node host-"+home+", which is down") {
			t.Errorf("pending message %q; want the volume and its node named", msg)
		}
	})

	setNodeState(t, st, home, api.NodeStatusState_NODE_STATUS_STATE_READY)
	waitfor.Holds(t, 10*time.Second, "db.002 assigned to the volume's node", viewed(st, func(tx store.ReadTx) bool {
		s, node, _ := taskState(tx, "db.002")
		return s == api.TaskState_TASK_STATE_ASSIGNED && node == home
	}, describeTasks))
}

func setNodeState(t *testing.T, st *store.Store, id string, state api.NodeStatusState) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		n := tx.GetNode(id)
		n.Status.State = state
		return tx.Update(n)
	})
	if err != nil {
		t.Fatalf("node %s %v: %v", id, state, err)
	}
}
