package controlapi

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func createVolume(t *testing.T, s *Server, spec *api.VolumeSpec) *api.Volume {
	t.Helper()
	resp, err := s.CreateVolume(context.Background(), &api.CreateVolumeRequest{Spec: spec})
	if err != nil {
		t.Fatalf("create volume %s: %v", spec.GetName(), err)
	}
	return resp.Volume
}

// volumeSpecWith is a service mounting the named volume at /data.
func volumeSpecWith(name, volume string, opts map[string]string) *api.ServiceSpec {
	spec := imageSpec(name)
	spec.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: volume, Target: "/data", VolumeOptions: opts}}
	return spec
}

// Create, inspect, list and remove; the driver is spelled out, names and
// options are checked, and a refused create writes nothing.
func TestVolumesLifecycle(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	vol := createVolume(t, s, &api.VolumeSpec{Name: "db-data", Labels: map[string]string{"team": "db"}})
	if vol.GetId() == "" || vol.GetSpec().GetDriver() != api.LocalVolumeDriver || vol.GetNodeId() != "" || vol.GetCreatedByService() != "" {
		t.Fatalf("created %v; want an id, driver local, no node, not created by a service", vol)
	}
	tmp := createVolume(t, s, &api.VolumeSpec{Name: "scratch", Driver: "local", Options: map[string]string{"type": "tmpfs", "o": "size=64m,mode=1777"}})

	for _, tc := range []struct {
		name string
		spec *api.VolumeSpec
		word string
		says string
	}{
		{"nil spec", nil, reason.InvalidSpec, "no volume spec"},
		{"a slash", &api.VolumeSpec{Name: "a/b"}, reason.InvalidSpec, "volume name"},
		{"upper case", &api.VolumeSpec{Name: "Data"}, reason.InvalidSpec, "volume name"},
		{"a template", &api.VolumeSpec{Name: "db-{{.Task.Slot}}"}, reason.InvalidSpec, "volume name"},
		{"another driver", &api.VolumeSpec{Name: "x", Driver: "nfs"}, reason.InvalidSpec, "the only driver is local"},
		{"unknown option", &api.VolumeSpec{Name: "x", Options: map[string]string{"size": "1g"}}, reason.InvalidSpec, "takes type, device and o"},
		{"unknown type", &api.VolumeSpec{Name: "x", Options: map[string]string{"type": "nfs", "o": "addr=1.2.3.4"}}, reason.InvalidSpec, "other file systems come later"},
		{"bind without o=bind", &api.VolumeSpec{Name: "x", Options: map[string]string{"type": "none", "device": "/srv/x"}}, reason.InvalidSpec, "needs o=bind"},
		{"bind of a relative path", &api.VolumeSpec{Name: "x", Options: map[string]string{"type": "none", "device": "srv", "o": "bind"}}, reason.InvalidSpec, "absolute path"},
		{"device without type", &api.VolumeSpec{Name: "x", Options: map[string]string{"device": "/srv/x"}}, reason.InvalidSpec, "need a type"},
		{"o with a newline", &api.VolumeSpec{Name: "x", Options: map[string]string{"type": "tmpfs", "o": "size=1m\nrw"}}, reason.InvalidSpec, "not a mount option"},
		{"bad label", &api.VolumeSpec{Name: "x", Labels: map[string]string{"bad key": "v"}}, reason.InvalidSpec, "label key"},
		{"name taken", &api.VolumeSpec{Name: "db-data"}, reason.AlreadyExists, "volume named db-data exists"},
	} {
		_, err := s.CreateVolume(ctx, &api.CreateVolumeRequest{Spec: tc.spec})
		wantRefused(t, tc.name, err, tc.word, tc.says)
	}
	if _, err := s.CreateVolume(ctx, &api.CreateVolumeRequest{Spec: &api.VolumeSpec{Name: "host", Options: map[string]string{"type": "none", "device": "/srv/host", "o": "bind"}}}); err != nil {
		t.Fatalf("a bind volume: %v", err)
	}

	for _, which := range []string{vol.Id, "db-data"} {
		got, err := s.GetVolume(ctx, &api.GetVolumeRequest{Volume: which})
		if err != nil || got.GetVolume().GetId() != vol.Id || got.GetVolume().GetSpec().GetLabels()["team"] != "db" {
			t.Fatalf("inspect by %s: %v, %v; want db-data with its label", which, got, err)
		}
	}
	_, err := s.GetVolume(ctx, &api.GetVolumeRequest{Volume: "nope"})
	wantRefused(t, "inspecting an unknown volume", err, reason.NotFound)

	// Paged like the other listings: two to a page, every volume once.
	var pages int
	all, err := paging.Collect(func(tok string) ([]*api.Volume, string, error) {
		pages++
		r, err := s.ListVolumes(ctx, &api.ListVolumesRequest{PageSize: 2, PageToken: tok})
		return r.GetVolumes(), r.GetNextPageToken(), err
	})
	if err != nil || len(all) != 3 || pages != 2 {
		t.Fatalf("listed %d volumes in %d pages (%v); want 3 in 2", len(all), pages, err)
	}
	_, err = s.ListVolumes(ctx, &api.ListVolumesRequest{PageToken: "garbage"})
	wantRefused(t, "a bad page token", err, reason.InvalidPageToken)

	if _, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: tmp.Id}); err != nil {
		t.Fatalf("remove by id: %v", err)
	}
	if _, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-data"}); err != nil {
		t.Fatalf("remove by name: %v", err)
	}
	_, err = s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-data"})
	wantRefused(t, "removing it twice", err, reason.NotFound)
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListVolumes()); n != 1 {
			t.Errorf("%d volumes left; want 1 (host)", n)
		}
		// Never placed: no node is told of them.
		if r := tx.GetNode("n1").GetRemovedVolumes(); len(r) != 0 {
			t.Errorf("node n1 told of removals %v; want none", r)
		}
	})
}

// A service naming a volume that does not exist creates it in the same
// write, recording the service, with the mount's options; every named
// mount is filled with its volume's id and options. Options differing
// from an existing volume's are refused.
func TestServiceCreatesItsVolumes(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	opts := map[string]string{"type": "tmpfs", "o": "size=16m"}
	create(t, s, volumeSpecWith("db", "db-data", opts))
	var vol *api.Volume
	st.View(func(tx store.ReadTx) {
		vol = tx.FindVolumeByName("db-data")
		if vol == nil {
			t.Fatal("no volume db-data after the service was created")
		}
		if vol.GetCreatedByService() != "db" || !maps.Equal(vol.GetSpec().GetOptions(), opts) || vol.GetSpec().GetDriver() != "local" {
			t.Errorf("implicit volume %v; want created by db, driver local, options %v", vol, opts)
		}
		m := tx.FindServiceByName("db").GetSpec().GetMounts()[0]
		if m.GetVolumeId() != vol.GetId() || !maps.Equal(m.GetVolumeOptions(), opts) {
			t.Errorf("stored mount %v; want volume id %s and its options", m, vol.GetId())
		}
	})

	// A second service naming it without options gets its options; one
	// naming other options is refused and changes nothing.
	create(t, s, volumeSpecWith("backup", "db-data", nil))
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: volumeSpecWith("other", "db-data", map[string]string{"type": "tmpfs", "o": "size=1g"})})
	wantRefused(t, "other options", err, reason.InvalidSpec, "volume db-data exists with other options (o=size=16m,type=tmpfs)")
	st.View(func(tx store.ReadTx) {
		if m := tx.FindServiceByName("backup").GetSpec().GetMounts()[0]; !maps.Equal(m.GetVolumeOptions(), opts) || m.GetVolumeId() != vol.GetId() {
			t.Errorf("backup's mount %v; want db-data's id and options", m)
		}
		if tx.FindServiceByName("other") != nil || len(tx.ListVolumes()) != 1 {
			t.Errorf("a refused create left a service or a volume behind")
		}
	})

	// An update naming a new volume creates it too; the old one stays,
	// as the spec a rollback would return to names it.
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "backup", Spec: volumeSpecWith("backup", "backup-data", nil)}); err != nil {
		t.Fatal(err)
	}
	st.View(func(tx store.ReadTx) {
		if v := tx.FindVolumeByName("backup-data"); v == nil || v.GetCreatedByService() != "backup" {
			t.Errorf("volume made by the update: %v; want backup-data created by backup", v)
		}
	})
}

// Mount checks: a volume source is a name (no '/') or a per-slot
// template of one (slotvolumes_test.go), tmpfs and bind fields are not a
// volume's, volume fields not a bind's.
func TestVolumeMountsChecked(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	vm := func(m *api.Mount) *api.ServiceSpec {
		spec := imageSpec("x")
		m.Type = api.MountType_MOUNT_TYPE_VOLUME
		if m.Target == "" {
			m.Target = "/data"
		}
		spec.Mounts = []*api.Mount{m}
		return spec
	}
	for _, tc := range []struct {
		name string
		spec *api.ServiceSpec
		says string
	}{
		{"a slash in the name", vm(&api.Mount{Source: "a/b"}), "volume name"},
		{"a path", vm(&api.Mount{Source: "/srv/data"}), "volume name"},
		{"a template of the node", vm(&api.Mount{Source: "db-{{.Node.ID}}"}), "a volume belongs to its data, not to a node"},
		{"relative target", vm(&api.Mount{Source: "d", Target: "data"}), "absolute path"},
		{"tmpfs size", vm(&api.Mount{Source: "d", TmpfsSizeBytes: 1 << 20}), "tmpfs mount's"},
		{"create_host_path", vm(&api.Mount{Source: "d", CreateHostPath: true}), "bind mount's"},
		{"bad option", vm(&api.Mount{Source: "d", VolumeOptions: map[string]string{"type": "ext4"}}), "other file systems"},
		{"volume options on a bind", &api.ServiceSpec{Name: "x", Image: "i", Mounts: []*api.Mount{{Source: "/srv", Target: "/srv", VolumeOptions: map[string]string{"type": "tmpfs"}}}}, "volume mount's"},
	} {
		_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: tc.spec})
		wantRefused(t, tc.name, err, reason.InvalidSpec, tc.says)
	}
	// An anonymous volume names none and creates none.
	create(t, s, vm(&api.Mount{Target: "/scratch"}))
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListVolumes()); n != 0 {
			t.Errorf("%d volumes after refused specs and an anonymous one; want 0", n)
		}
	})
	// A hook bundle mounts volumes as a container does (agent/exec/hooks).
	create(t, s, &api.ServiceSpec{Name: "job", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": nil}},
		Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "job-data", Target: "/srv/job"}}})
	st.View(func(tx store.ReadTx) {
		if v := tx.FindVolumeByName("job-data"); v == nil || v.GetCreatedByService() != "job" {
			t.Errorf("volume of a bundle's spec: %v; want job-data created by job", v)
		}
	})
}

// A volume a service's spec or previous spec names, or a replica not
// ended uses, is not removed (volume_in_use, naming them); a placed one's
// removal tells its node.
func TestRemoveVolumeInUse(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	create(t, s, volumeSpecWith("db", "db-data", nil))
	_, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-data"})
	wantRefused(t, "removing a volume a spec names", err, reason.VolumeInUse, "used by services db")
	got, err := s.GetVolume(ctx, &api.GetVolumeRequest{Volume: "db-data"})
	if err != nil || strings.Join(got.GetServices(), ",") != "db" {
		t.Fatalf("inspect: %v, %v; want it used by db", got, err)
	}

	// Updated off it: the spec a rollback returns to still names it.
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "db", Spec: imageSpec("db")}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-data"})
	wantRefused(t, "removing the volume a rollback returns to", err, reason.VolumeInUse, "db")

	// The service gone, a replica still running on n1 holds it; the
	// scheduler had placed the volume there.
	var svc *api.Service
	st.View(func(tx store.ReadTx) { svc = tx.FindServiceByName("db") })
	if _, err := s.RemoveService(ctx, &api.RemoveServiceRequest{Service: "db"}); err != nil {
		t.Fatal(err)
	}
	var vol *api.Volume
	st.View(func(tx store.ReadTx) { vol = tx.FindVolumeByName("db-data") })
	vol.NodeId = "n1"
	updateObject(t, st, vol)
	task := &api.Task{Id: "t1", ServiceId: svc.Id, ServiceName: "db", Slot: 1, NodeId: "n1", Spec: svc.GetPreviousSpec(),
		Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}, DesiredState: api.TaskState_TASK_STATE_SHUTDOWN}
	storetest.Create(t, st, task)
	_, err = s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-data"})
	wantRefused(t, "removing a volume a running replica uses", err, reason.VolumeInUse, "db.1")

	st.View(func(tx store.ReadTx) { task = tx.GetTask("t1") })
	task.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_SHUTDOWN}
	updateObject(t, st, task)
	if _, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: "db-data"}); err != nil {
		t.Fatalf("remove once nothing uses it: %v", err)
	}
	st.View(func(tx store.ReadTx) {
		r := tx.GetNode("n1").GetRemovedVolumes()
		if len(r) != 1 || r[0].GetId() != vol.GetId() || r[0].GetName() != "db-data" {
			t.Errorf("node n1 told of removals %v; want db-data %s", r, vol.GetId())
		}
	})
}

// A node is told of its newest api.MaxRemovedVolumes removals only.
func TestRemovedVolumesBounded(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	for i := range api.MaxRemovedVolumes + 5 {
		name := fmt.Sprintf("v%d", i)
		v := createVolume(t, s, &api.VolumeSpec{Name: name})
		v.NodeId = "n1"
		updateObject(t, st, v)
		if _, err := s.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: name}); err != nil {
			t.Fatal(err)
		}
	}
	st.View(func(tx store.ReadTx) {
		r := tx.GetNode("n1").GetRemovedVolumes()
		if len(r) != api.MaxRemovedVolumes || r[0].GetName() != "v5" || r[len(r)-1].GetName() != fmt.Sprintf("v%d", api.MaxRemovedVolumes+4) {
			t.Errorf("node n1 told of %d removals, %s to %s; want %d, v5 to the newest", len(r), r[0].GetName(), r[len(r)-1].GetName(), api.MaxRemovedVolumes)
		}
	})
}

// updateObject writes obj as it stands over the stored one.
func updateObject(t *testing.T, st *store.Store, obj store.Object) {
	t.Helper()
	if err := st.Update(context.Background(), func(tx *store.Tx) error { return tx.Update(obj) }); err != nil {
		t.Fatalf("update %T %s: %v", obj, obj.GetId(), err)
	}
}
