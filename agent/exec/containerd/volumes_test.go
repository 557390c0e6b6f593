package containerd

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// A file a container writes into a named volume outlives the container:
// a second container mounting the volume sees it, the volume's directory
// stays when both are removed, and only the cluster's removal of that
// very volume deletes it. An anonymous volume goes with its replica.
func TestNamedVolumeOutlivesReplicas(t *testing.T) {
	d := containerdtest.Start(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	n := newNode(t, d, "nv1", WithVolumesDir(volDir))
	ctx := context.Background()
	mounts := func() []*api.Mount {
		return []*api.Mount{
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db-data", VolumeId: "vol1", Target: "/data"},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/scratch"},
		}
	}

	writer := replica(t, n.id, "writer", &api.ServiceSpec{
		Command: []string{"sh", "-c", "echo kept > /data/f && echo gone > /scratch/f && echo written"},
		Mounts:  mounts(),
	})
	c := start(t, n.rt, writer)
	if e := wait(t, c); e.Code != 0 {
		t.Fatalf("writer exited %d", e.Code)
	}
	waitLog(t, writer, "written")
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.Remove(rctx); err != nil {
		t.Fatalf("remove writer: %v", err)
	}
	data := volumes.Dir(volDir).Path("db-data")
	if b, err := os.ReadFile(filepath.Join(data, "f")); err != nil || string(b) != "kept\n" {
		t.Fatalf("after the writer's removal, %s/f: %q, %v; want kept", data, b, err)
	}

	reader := replica(t, n.id, "reader", &api.ServiceSpec{
		Command: []string{"sh", "-c", "cat /data/f; ls /scratch | wc -l | sed 's/^/scratch files: /'"},
		Mounts:  mounts(),
	})
	c2 := start(t, n.rt, reader)
	wait(t, c2)
	waitLog(t, reader, "kept")
	waitLog(t, reader, "scratch files: 0")

	// The anonymous volume is in the replica's own dir.
	if matches, _ := filepath.Glob(filepath.Join(reader.Dir, "volumes", "*", "_data")); len(matches) != 1 {
		t.Errorf("reader's anonymous volumes: %v; want one under its dir", matches)
	}

	// Another volume's removal, or this name's under another id, leaves
	// it; its own removal deletes it.
	for _, ref := range []*api.VolumeRef{{Id: "vol0", Name: "db-data"}, {Id: "vol1", Name: "other"}} {
		if removed, err := volumes.Dir(volDir).Remove(ref); removed || err != nil {
			t.Fatalf("remove %v: %v, %v; want nothing removed", ref, removed, err)
		}
	}
	if removed, err := volumes.Dir(volDir).Remove(&api.VolumeRef{Id: "vol1", Name: "db-data"}); !removed || err != nil {
		t.Fatalf("remove db-data vol1: %v, %v; want it removed", removed, err)
	}
	if _, err := os.Stat(filepath.Dir(data)); !os.IsNotExist(err) {
		t.Fatalf("db-data's directory after its removal: %v; want it gone", err)
	}
}
