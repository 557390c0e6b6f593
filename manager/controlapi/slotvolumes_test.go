package controlapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// slotVolumeSpec is a service of 3 replicas mounting source at /data.
func slotVolumeSpec(name, source string) *api.ServiceSpec {
	spec := imageSpec(name)
	spec.Labels = map[string]string{"tier": "db"}
	spec.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: source, Target: "/data"}}
	return spec
}

// A volume source may be a template of what is known before placement and
// stays with a slot (.Service.ID, .Name, .Labels, .Task.Slot); the node's
// fields and the task's id and name are refused, saying why, as is a
// template that does not expand to a volume name. An accepted one creates
// no volume (the scheduler creates each slot's) and is stored as given.
func TestSlotVolumeSourceChecked(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		source string
		says   string
	}{
		{"db-{{.Node.ID}}", ".Node.ID: a volume belongs to its data, not to a node"},
		{"db-{{.Node.Hostname}}", ".Node.Hostname: a volume belongs to its data"},
		{"db-{{.Node.Platform.OS}}", ".Node.Platform.OS"},
		{"db-{{.Task.ID}}", ".Task.ID: it differs with every replica of a slot, so each restart would get a fresh, empty volume"},
		{"db-{{.Task.Name}}", ".Task.Name: it differs with every replica"},
		{"db-{{$.Node.ID}}", ".Node.ID"},
		{"db-{{with .Task}}{{.ID}}{{end}}", "may use only .Service.ID, .Service.Name, .Service.Labels and .Task.Slot"},
		{"DB-{{.Task.Slot}}", "volume name"},
		{"db/{{.Task.Slot}}", "volume name"},
		{strings.Repeat("d", 62) + "-{{.Task.Slot}}", "volume name"},
		{"db-{{.Service.Labels.missing}}", "missing"},
		{"db-{{.Task.Slot", "volume source"},
	} {
		_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: slotVolumeSpec("x", tc.source)})
		wantRefused(t, tc.source, err, reason.InvalidSpec, "volume mount at /data", tc.says)
	}

	for i, source := range []string{"db-{{.Task.Slot}}", "{{.Service.Name}}-{{.Task.Slot}}", `{{index .Service.Labels "tier"}}-{{.Service.ID}}-{{.Task.Slot}}`} {
		spec := slotVolumeSpec(fmt.Sprintf("ok%d", i), source)
		spec.Mounts[0].VolumeId = "from-an-old-inspect"
		svc := create(t, s, spec)
		if m := svc.GetSpec().GetMounts()[0]; m.GetSource() != source || m.GetVolumeId() != "" {
			t.Errorf("%s stored as %v; want the template kept and no volume id", source, m)
		}
	}
	// A global service's slot is its node: each node its own volume.
	global := slotVolumeSpec("agent", "cache-{{.Task.Slot}}")
	global.Mode, global.Replicas = api.ServiceMode_SERVICE_MODE_GLOBAL, 0
	create(t, s, global)
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListVolumes()); n != 0 {
			t.Errorf("%d volumes after specs with per-slot volumes; want none until the scheduler places a replica", n)
		}
	})
}

// A per-slot volume is in use while its service has its slot (a
// replicated one's 1..replicas, in its spec or the one a rollback
// returns to; a global one's node) and while a replica of the slot has
// not ended, pending or running; a slot scaled away, and its replicas
// ended, it is removed.
func TestRemoveSlotVolumeInUse(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	svc := create(t, s, slotVolumeSpec("db", "db-{{.Task.Slot}}"))
	for _, name := range []string{"db-2", "db-7"} {
		v := createVolume(t, s, &api.VolumeSpec{Name: name})
		v.NodeId = "n1"
		updateObject(t, st, v)
	}
	_, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-2"})
	wantRefused(t, "removing slot 2's volume of a service of 3", err, reason.VolumeInUse, "used by services db")
	if got, err := s.GetVolume(ctx, &api.GetVolumeRequest{Volume: "db-2"}); err != nil || strings.Join(got.GetServices(), ",") != "db" {
		t.Fatalf("inspect db-2: %v, %v; want it used by db", got, err)
	}
	if _, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-7"}); err != nil {
		t.Fatalf("remove db-7, a slot db does not have: %v", err)
	}

	// Scaled to 1, twice, so that a rollback returns to 1 too: slot 2's
	// replicas still hold it, one running (told its volume), one pending
	// (its slot's source expands to it).
	one := slotVolumeSpec("db", "db-{{.Task.Slot}}")
	one.Replicas = 1
	for _, label := range []string{"a", "b"} {
		one.Labels["rev"] = label
		if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "db", Spec: one}); err != nil {
			t.Fatal(err)
		}
	}
	var spec *api.ServiceSpec
	st.View(func(tx store.ReadTx) { spec = tx.GetService(svc.GetId()).GetSpec() })
	running := &api.Task{Id: "t2", ServiceId: svc.GetId(), ServiceName: "db", Slot: 2, NodeId: "n1", Spec: spec,
		Volumes:      []*api.TaskVolume{{Target: "/data", Name: "db-2", Id: "whatever"}},
		Status:       &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING},
		DesiredState: api.TaskState_TASK_STATE_SHUTDOWN}
	pending := &api.Task{Id: "t2b", ServiceId: svc.GetId(), ServiceName: "db", Slot: 2, Spec: spec,
		Status:       &api.TaskStatus{State: api.TaskState_TASK_STATE_PENDING},
		DesiredState: api.TaskState_TASK_STATE_RUNNING}
	storetest.Create(t, st, running, pending)
	for _, task := range []*api.Task{running, pending} {
		_, err = s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-2"})
		wantRefused(t, "removing db-2 while "+task.GetId()+" has not ended", err, reason.VolumeInUse, "replicas that have not ended", "db.2")
		st.View(func(tx store.ReadTx) { task = tx.GetTask(task.GetId()) })
		task.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_SHUTDOWN}
		updateObject(t, st, task)
	}
	if _, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-2"}); err != nil {
		t.Fatalf("remove db-2 once slot 2 is gone and its replicas ended: %v", err)
	}

	// A global service's volume of node n1 is in use while n1 is in the
	// cluster.
	global := slotVolumeSpec("agent", "cache-{{.Task.Slot}}")
	global.Mode, global.Replicas = api.ServiceMode_SERVICE_MODE_GLOBAL, 0
	create(t, s, global)
	v := createVolume(t, s, &api.VolumeSpec{Name: "cache-n1"})
	v.NodeId = "n1"
	updateObject(t, st, v)
	_, err = s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "cache-n1"})
	wantRefused(t, "removing node n1's volume of a global service", err, reason.VolumeInUse, "used by services agent")
}
