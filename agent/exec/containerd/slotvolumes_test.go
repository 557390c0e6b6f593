package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/spectemplate"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// slotReplica is the replica the agent makes of task id, slot slot of
// service web mounting db-{{.Task.Slot}} at /data, as the scheduler
// assigns it (Task.volumes naming db-SLOT, id vol-db-SLOT): its spec
// expanded for the node and its per-slot volume filled as the agent's
// runner does (spectemplate.Expand, volumes.SlotVolumes).
func slotReplica(t *testing.T, nodeID, id string, slot uint64, script string) exec.Replica {
	t.Helper()
	spec := &api.ServiceSpec{
		Name: "web", Image: testImage, Command: []string{"sh", "-c", script},
		Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db-{{.Task.Slot}}", Target: "/data"}},
	}
	task := &api.Task{Id: id, ServiceId: "svc", ServiceName: "web", Slot: slot, NodeId: nodeID, Spec: spec,
		Volumes: []*api.TaskVolume{{Target: "/data", Name: fmt.Sprintf("db-%d", slot), Id: fmt.Sprintf("vol-db-%d", slot)}}}
	expanded, err := spectemplate.Expand(spec, spectemplate.NewContext(task, spectemplate.Node{ID: nodeID, Hostname: "host-" + nodeID}))
	if err != nil {
		t.Fatalf("expand %s: %v", id, err)
	}
	if err := volumes.SlotVolumes(task, expanded); err != nil {
		t.Fatalf("slot volumes of %s: %v", id, err)
	}
	rep := replica(t, nodeID, id, expanded)
	task.Spec = expanded
	rep.Task = task
	return rep
}

// Each slot's replica mounts its own volume, db-2 and db-3, under the id
// the scheduler gave it; a later replica of slot 2 finds what the first
// wrote, and slot 3's write is not in it (docs/adr/0061-volumes.md).
func TestSlotVolumePerReplica(t *testing.T) {
	d := containerdtest.Start(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	n := newNode(t, d, "sv1", WithVolumesDir(volDir))
	ctx := context.Background()

	for _, slot := range []uint64{2, 3} {
		rep := slotReplica(t, n.id, fmt.Sprintf("w%d", slot), slot, fmt.Sprintf("echo slot-%d > /data/f && echo written", slot))
		c := start(t, n.rt, rep)
		if e := wait(t, c); e.Code != 0 {
			t.Fatalf("slot %d's writer exited %d", slot, e.Code)
		}
		waitLog(t, rep, "written")
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := c.Remove(rctx)
		cancel()
		if err != nil {
			t.Fatalf("remove slot %d's writer: %v", slot, err)
		}
	}
	for _, slot := range []uint64{2, 3} {
		data := volumes.Dir(volDir).Path(fmt.Sprintf("db-%d", slot))
		if b, err := os.ReadFile(filepath.Join(data, "f")); err != nil || string(b) != fmt.Sprintf("slot-%d\n", slot) {
			t.Errorf("db-%d's f: %q, %v; want slot-%d", slot, b, err, slot)
		}
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(data), "id")); err != nil || strings.TrimSpace(string(b)) != fmt.Sprintf("vol-db-%d", slot) {
			t.Errorf("db-%d's id file: %q, %v; want the scheduler's id vol-db-%d", slot, b, err, slot)
		}
	}

	reader := slotReplica(t, n.id, "r2", 2, "cat /data/f")
	wait(t, start(t, n.rt, reader))
	waitLog(t, reader, "slot-2")
	if b, _ := os.ReadFile(reader.LogPath); strings.Contains(string(b), "slot-3") {
		t.Fatalf("slot 2's replica reads %q; want its own volume only", b)
	}
}
