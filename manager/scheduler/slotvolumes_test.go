package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// slotSpec is a service of replicas mounting its per-slot volume
// db-{{.Task.Slot}} at /data, with the given volume options.
func slotSpec(name string, replicas uint64, opts map[string]string) *api.ServiceSpec {
	spec := imageSpec(name)
	spec.Replicas = replicas
	spec.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db-{{.Task.Slot}}", Target: "/data", VolumeOptions: opts}}
	return spec
}

// slotTask is a PENDING task of spec's service (id = name) in slot.
func slotTask(id string, spec *api.ServiceSpec, slot uint64) *api.Task {
	t := pendingTasks(spec, 1)[0]
	t.Id, t.Slot = id, slot
	return t
}

// describeSlots is the tasks and volumes of a store, for failures.
func describeSlots(tx store.ReadTx) string {
	var vols []string
	tx.ScanVolumes("", func(v *api.Volume) bool {
		vols = append(vols, fmt.Sprintf("%s(%s)@%q", v.GetSpec().GetName(), v.GetId(), v.GetNodeId()))
		return true
	})
	return describeTasks(tx) + " volumes " + fmt.Sprint(vols)
}

// assignedOn reports whether task id is ASSIGNED to node and told of the
// one volume name with the id of the stored volume of that name, which
// lives on node.
func assignedOn(tx store.ReadTx, id, node, name string) bool {
	task, vol := tx.GetTask(id), tx.FindVolumeByName(name)
	if task.GetStatus().GetState() != api.TaskState_TASK_STATE_ASSIGNED || task.GetNodeId() != node || vol.GetNodeId() != node {
		return false
	}
	tv := task.GetVolumes()
	return len(tv) == 1 && tv[0].GetName() == name && tv[0].GetId() == vol.GetId() && tv[0].GetTarget() == "/data"
}

// Three replicas of db-{{.Task.Slot}} create db-1, db-2 and db-3, each in
// the proposal that places its slot's first replica, on that replica's
// node; the task keeps the template in its spec and is told its volume's
// name and id. A restarted replica of slot 2 goes to db-2's node, though
// an empty node would win the spread; with that node down it waits
// volume_unavailable while slots 1 and 3 restart on theirs; a new
// leader's scheduler keeps the mapping and creates no volume again.
func TestSlotVolumesFollowTheirSlot(t *testing.T) {
	st := storetest.New(t)
	opts := map[string]string{"type": "tmpfs", "o": "size=1m"}
	spec := slotSpec("db", 3, opts)
	storetest.Create(t, st, readyNode("a1"), readyNode("b1"), readyNode("c1"), service(spec))
	stop := startScheduler(t, st)
	storetest.Create(t, st, slotTask("db.1", spec, 1), slotTask("db.2", spec, 2), slotTask("db.3", spec, 3))

	home := map[uint64]string{}
	waitfor.Holds(t, 10*time.Second, "db.1-3 assigned, each with its db-N on its node", viewed(st, func(tx store.ReadTx) bool {
		for slot := uint64(1); slot <= 3; slot++ {
			id, name := fmt.Sprintf("db.%d", slot), fmt.Sprintf("db-%d", slot)
			home[slot] = tx.GetTask(id).GetNodeId()
			if !assignedOn(tx, id, home[slot], name) {
				return false
			}
		}
		return true
	}, describeSlots))
	ids := map[string]string{}
	st.View(func(tx store.ReadTx) {
		if home[1] == home[2] || home[2] == home[3] || home[1] == home[3] {
			t.Errorf("slots on nodes %v; want the spread over three nodes", home)
		}
		for slot := uint64(1); slot <= 3; slot++ {
			task, vol := tx.GetTask(fmt.Sprintf("db.%d", slot)), tx.FindVolumeByName(fmt.Sprintf("db-%d", slot))
			ids[vol.GetSpec().GetName()] = vol.GetId()
			if task.GetMeta().GetVersion() != vol.GetMeta().GetVersion() {
				t.Errorf("slot %d: task written at %d, volume created at %d; want one proposal", slot, task.GetMeta().GetVersion(), vol.GetMeta().GetVersion())
			}
			if vol.GetCreatedByService() != "db" || !maps.Equal(vol.GetSpec().GetOptions(), opts) || vol.GetPlacedAt() == nil ||
				!maps.Equal(task.GetVolumes()[0].GetOptions(), opts) {
				t.Errorf("slot %d: volume %v, task volumes %v; want created by db with the mount's options, placed", slot, vol, task.GetVolumes())
			}
			if !proto.Equal(task.GetSpec(), spec) {
				t.Errorf("slot %d: task spec %v; want the service's, template kept", slot, task.GetSpec())
			}
		}
	})

	// An empty node would win the spread (db.2 still runs, as in a
	// start-first replacement): slot 2's new replica goes home all the
	// same.
	storetest.Create(t, st, readyNode("d1"))
	storetest.Create(t, st, slotTask("db.2b", spec, 2))
	waitfor.Holds(t, 10*time.Second, "db.2b assigned to db-2's node", viewed(st, func(tx store.ReadTx) bool {
		return assignedOn(tx, "db.2b", home[2], "db-2")
	}, describeSlots))
	endTask(t, st, "db.2")

	// db-2's node down: slot 2 waits, slots 1 and 3 restart at home.
	setNodeState(t, st, home[2], api.NodeStatusState_NODE_STATUS_STATE_DOWN)
	for _, id := range []string{"db.1", "db.2b", "db.3"} {
		endTask(t, st, id)
	}
	storetest.Create(t, st, slotTask("db.1c", spec, 1), slotTask("db.2c", spec, 2), slotTask("db.3c", spec, 3))
	waitfor.Holds(t, 10*time.Second, "db.2c pending volume_unavailable, db.1c and db.3c at home", viewed(st, func(tx store.ReadTx) bool {
		s, node, r := taskState(tx, "db.2c")
		return s == api.TaskState_TASK_STATE_PENDING && node == "" && r == ReasonVolumeUnavailable &&
			assignedOn(tx, "db.1c", home[1], "db-1") && assignedOn(tx, "db.3c", home[3], "db-3")
	}, describeSlots))
	st.View(func(tx store.ReadTx) {
		msg := tx.GetTask("db.2c").GetStatus().GetMessage()
		if want := "volume db-2 lives on node host-" + home[2] + ", which is down"; !strings.Contains(msg, want) {
			t.Errorf("db.2c pending %q; want %q", msg, want)
		}
	})

	// A new leader: a fresh scheduler over the same store. The node back,
	// slot 2 goes home; no volume is made again.
	stop()
	setNodeState(t, st, home[2], api.NodeStatusState_NODE_STATUS_STATE_READY)
	startScheduler(t, st)
	waitfor.Holds(t, 10*time.Second, "db.2c assigned to db-2's node by the new scheduler", viewed(st, func(tx store.ReadTx) bool {
		return assignedOn(tx, "db.2c", home[2], "db-2")
	}, describeSlots))
	st.View(func(tx store.ReadTx) {
		n := 0
		tx.ScanVolumes("", func(v *api.Volume) bool {
			n++
			if ids[v.GetSpec().GetName()] != v.GetId() {
				t.Errorf("volume %s has id %s; want %s, the one slot %s first made", v.GetSpec().GetName(), v.GetId(), ids[v.GetSpec().GetName()], v.GetSpec().GetName())
			}
			return true
		})
		if n != 3 {
			t.Errorf("%d volumes; want db-1, db-2, db-3 only: %s", n, describeSlots(tx))
		}
	})
}

// endTask records task id ended (FAILED, desired SHUTDOWN), as a replica
// that died.
func endTask(t *testing.T, st *store.Store, id string) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		task := tx.GetTask(id)
		task.DesiredState = api.TaskState_TASK_STATE_SHUTDOWN
		task.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_FAILED}
		return tx.Update(task)
	})
	if err != nil {
		t.Fatalf("end %s: %v", id, err)
	}
}

// A global service's per-slot volume is its node's (the slot of a global
// replica is its node's id): each replica creates its own on its node.
func TestSlotVolumesOfGlobalServicePerNode(t *testing.T) {
	spec := imageSpec("agent")
	spec.Mode = api.ServiceMode_SERVICE_MODE_GLOBAL
	spec.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "cache-{{.Task.Slot}}", Target: "/data"}}
	ta, tb := slotTask("agent.a1", spec, 0), slotTask("agent.b1", spec, 0)
	ta.NodeId, tb.NodeId = "a1", "b1"
	writes := testScheduler().decide(testIndex(readyNode("a1"), readyNode("b1"), service(spec), ta, tb))
	if len(writes) != 2 {
		t.Fatalf("%d writes; want 2 assignments", len(writes))
	}
	for _, w := range writes {
		node := w.task.GetNodeId()
		want := "cache-" + node
		if w.task.GetStatus().GetState() != api.TaskState_TASK_STATE_ASSIGNED || len(w.volumes) != 1 ||
			w.volumes[0].GetSpec().GetName() != want || w.volumes[0].GetNodeId() != node || w.oldVolumes[0] != nil ||
			len(w.task.GetVolumes()) != 1 || w.task.GetVolumes()[0].GetName() != want || w.task.GetVolumes()[0].GetId() != w.volumes[0].GetId() {
			t.Errorf("%s: %v, creates %v, told %v; want assigned to %s creating %s there", w.task.GetId(), w.task.GetStatus(), w.volumes, w.task.GetVolumes(), node, want)
		}
	}
}

// Replicas of one slot decided in one batch (a start-first update's old
// and new) share the one volume the first creates; a slot's volume that
// exists with other options than the mount gives keeps its replica
// pending, naming both.
func TestSlotVolumesInOneBatchAndMismatch(t *testing.T) {
	spec := slotSpec("db", 1, nil)
	writes := testScheduler().decide(testIndex(readyNode("a1"), readyNode("b1"), service(spec),
		slotTask("db.1", spec, 1), slotTask("db.1b", spec, 1)))
	created := 0
	for _, w := range writes {
		created += len(w.volumes)
		if w.task.GetNodeId() != writes[0].task.GetNodeId() || len(w.task.GetVolumes()) != 1 {
			t.Errorf("%s on %q told %v; want with the slot's first on %s", w.task.GetId(), w.task.GetNodeId(), w.task.GetVolumes(), writes[0].task.GetNodeId())
		}
	}
	if len(writes) != 2 || created != 1 || writes[0].task.GetVolumes()[0].GetId() != writes[1].task.GetVolumes()[0].GetId() {
		t.Fatalf("%d writes creating %d volumes; want two assignments sharing one new volume", len(writes), created)
	}

	tmpfs := slotSpec("db", 1, map[string]string{"type": "tmpfs"})
	out := decideOnce(t, testIndex(readyNode("a1"), service(tmpfs), volume("db-1", ""), slotTask("db.1", tmpfs, 1)))
	if msg := out.pending["db.1"]; !strings.HasPrefix(msg, ReasonVolumeUnavailable) || !strings.Contains(msg, "volume db-1 exists with other options (none) than the mount at /data gives (type=tmpfs)") {
		t.Errorf("pending %q; want volume_unavailable naming both options", msg)
	}
}

// A proposal whose volume another write created first (same name, other
// id) is stale: the task is decided again against the stored volume, and
// goes to its node. So is a later proposal of the batch whose replica
// followed the failed one there (one task per proposal here): it would
// otherwise run away from its slot's volume.
func TestSlotVolumeCreatedMeanwhile(t *testing.T) {
	st := storetest.New(t)
	spec := slotSpec("db", 1, nil)
	storetest.Create(t, st, readyNode("a1"), readyNode("b1"), service(spec), slotTask("db.1", spec, 1), slotTask("db.1b", spec, 1))
	s := New(st, WithLogger(slog.New(slog.DiscardHandler)), WithProposalLimits(1, DefaultMaxProposalBytes))
	ix := newIndex()
	st.View(func(tx store.ReadTx) { ix.load(tx) })
	writes := s.decide(ix)
	if len(writes) != 2 || len(writes[0].volumes) != 1 || len(writes[1].volumes) != 0 {
		t.Fatalf("writes %v; want db.1 assigned creating db-1, db.1b following it", writes)
	}
	other := "a1"
	if writes[0].task.GetNodeId() == "a1" {
		other = "b1"
	}
	storetest.Create(t, st, volume("db-1", other))
	if _, err := s.commit(context.Background(), ix, writes); err != nil {
		t.Fatalf("commit: %v", err)
	}
	st.View(func(tx store.ReadTx) {
		for _, id := range []string{"db.1", "db.1b"} {
			if s, node, _ := taskState(tx, id); s != api.TaskState_TASK_STATE_PENDING {
				t.Errorf("%s stored %v on %q; want still pending, its volume on %s", id, s, node, other)
			}
		}
	})
	if v := ix.volumes["db-1"]; v.GetId() != "vol-db-1" {
		t.Fatalf("index holds db-1 %v after the stale proposal; want the stored one", v)
	}
	writes = s.decide(ix)
	if len(writes) != 2 {
		t.Fatalf("decided again: %d writes; want both replicas", len(writes))
	}
	for _, w := range writes {
		if w.task.GetNodeId() != other || len(w.volumes) != 0 || w.task.GetVolumes()[0].GetId() != "vol-db-1" {
			t.Errorf("decided again: %s on %q creating %v told %v; want on %s with vol-db-1, creating nothing",
				w.task.GetId(), w.task.GetNodeId(), w.volumes, w.task.GetVolumes(), other)
		}
	}
}
