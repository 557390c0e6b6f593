package containerd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/ociimage"
)

// copyUpImage is an image whose /data belongs to uid 472, as grafana's
// /var/lib/grafana does, and whose /cache holds a file.
const copyUpImage = "jaco.local/copyup:latest"

// copyMarker is agent/volumes' marker of a copy cut short, beside _data.
const copyMarker = "copying"

// loadCopyUpImage loads copyUpImage into n's runtime.
func loadCopyUpImage(t *testing.T, n *node) {
	t.Helper()
	var buf bytes.Buffer
	if err := ociimage.Build(&buf, copyUpImage,
		ociimage.WithDir("/data", 0o750), ociimage.WithOwner("/data", 472, 0),
		ociimage.WithFile("/data/seed", []byte("seed\n"), 0o640), ociimage.WithOwner("/data/seed", 472, 472),
		ociimage.WithDir("/data/sub", 0o755), ociimage.WithOwner("/data/sub", 472, 472),
		ociimage.WithFile("/cache/warm", []byte("warm\n"), 0o644),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := n.rt.LoadImage(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
}

// prepare prepares rep on rt (without starting it) and removes it when t
// ends.
func prepare(t *testing.T, rt *Runtime, rep exec.Replica) exec.Controller {
	t.Helper()
	c, err := rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Remove(ctx); err != nil {
			t.Errorf("remove: %v", err)
		}
	})
	return c
}

// checkEntry fails t unless path has the type and permission bits mode
// and the owner uid:gid.
func checkEntry(t *testing.T, path string, mode, uid, gid uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if st.Mode != mode || st.Uid != uid || st.Gid != gid {
		t.Errorf("%s: mode %o owner %d:%d; want mode %o owner %d:%d", path, st.Mode, st.Uid, st.Gid, mode, uid, gid)
	}
}

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A new named volume gets what the image holds at its target, owners and
// modes kept, so a process of the image's user writes in it; so does an
// anonymous one. A second replica, once the first has written, gets
// nothing again; an empty volume its own replica emptied is not filled
// under it.
func TestVolumeCopyUpFillsNewVolume(t *testing.T) {
	d := containerdtest.Start(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	n := newNode(t, d, "cu1", WithVolumesDir(volDir))
	loadCopyUpImage(t, n)
	mounts := func() []*api.Mount {
		return []*api.Mount{
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "gdata", VolumeId: "vol1", Target: "/data"},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/cache"},
		}
	}

	first := replica(t, n.id, "first", &api.ServiceSpec{
		Image: copyUpImage, User: "472", Mounts: mounts(),
		Command: []string{"sh", "-c", "cat /data/seed /cache/warm && echo mine > /data/seed && echo new > /data/new && echo written"},
	})
	c := start(t, n.rt, first)
	if e := wait(t, c); e.Code != 0 {
		t.Fatalf("first replica exited %d (uid 472 could not write in its volume?)", e.Code)
	}
	waitLog(t, first, "written")
	data := volumes.Dir(volDir).Path("gdata")
	checkEntry(t, data, unix.S_IFDIR|0o750, 472, 0)
	checkEntry(t, filepath.Join(data, "seed"), unix.S_IFREG|0o640, 472, 472)
	checkEntry(t, filepath.Join(data, "sub"), unix.S_IFDIR|0o755, 472, 472)
	if b, err := os.ReadFile(first.LogPath); err != nil || !bytes.Contains(b, []byte("seed\nwarm\n")) {
		t.Errorf("first replica's log %q, %v; want the image's seed and warm", b, err)
	}
	if _, err := os.Stat(filepath.Join(data, "..", copyMarker)); !os.IsNotExist(err) {
		t.Errorf("copy marker after the copy: %v; want none", err)
	}

	// Prepared again (an agent restart) after it ran, with its volume
	// emptied meanwhile: nothing is copied under it.
	if err := os.Remove(filepath.Join(first.Dir, "volumes", "1", "_data", "warm")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	again, err := n.open(t, WithVolumesDir(volDir)).Controller(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Prepare(ctx); err != nil {
		t.Fatalf("prepare again: %v", err)
	}
	if got := entries(t, filepath.Join(first.Dir, "volumes", "1", "_data")); len(got) != 0 {
		t.Errorf("anonymous volume of a replica that ran, prepared again: %v; want it left empty", got)
	}

	second := replica(t, n.id, "second", &api.ServiceSpec{
		Image: copyUpImage, Mounts: mounts(),
		Command: []string{"sh", "-c", `cat /data/seed; cat /data/new; set -- $(ls /data); echo "entries: $#"`},
	})
	c2 := start(t, n.rt, second)
	wait(t, c2)
	waitLog(t, second, "mine\nnew\nentries: 3")
	if b, err := os.ReadFile(filepath.Join(data, "seed")); err != nil || string(b) != "mine\n" {
		t.Errorf("seed after the second replica: %q, %v; want the first replica's", b, err)
	}
}

// volume_no_copy leaves a new volume empty and root's; so does an image
// with nothing at the target; a type=none volume's device is never
// written into.
func TestVolumeCopyUpSkipped(t *testing.T) {
	d := containerdtest.Start(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	n := newNode(t, d, "cu2", WithVolumesDir(volDir))
	loadCopyUpImage(t, n)
	device := t.TempDir()
	rep := replica(t, n.id, "skip", &api.ServiceSpec{
		Image: copyUpImage,
		Mounts: []*api.Mount{
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "nocopy", VolumeId: "v1", Target: "/data", VolumeNoCopy: true},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "absent", VolumeId: "v2", Target: "/absent"},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "dev", VolumeId: "v3", Target: "/cache",
				VolumeOptions: map[string]string{api.VolumeOptType: api.VolumeTypeNone, api.VolumeOptO: "bind", api.VolumeOptDevice: device}},
		},
	})
	prepare(t, n.rt, rep)
	for _, dir := range []string{volumes.Dir(volDir).Path("nocopy"), volumes.Dir(volDir).Path("absent"), device} {
		if got := entries(t, dir); len(got) != 0 {
			t.Errorf("%s after Prepare: %v; want it empty", dir, got)
		}
	}
	checkEntry(t, volumes.Dir(volDir).Path("nocopy"), unix.S_IFDIR|0o755, 0, 0)
}

// A copy cut short (the agent killed: the marker beside _data, part of
// the content in it) is cleared and done again by the next Prepare, also
// of a replica whose container was made before the agent died; never
// taken for the volume's data.
func TestVolumeCopyUpRedoesInterruptedCopy(t *testing.T) {
	d := containerdtest.Start(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	n := newNode(t, d, "cu3", WithVolumesDir(volDir))
	loadCopyUpImage(t, n)
	rep := replica(t, n.id, "redo", &api.ServiceSpec{
		Image:   copyUpImage,
		Mounts:  []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "cut", VolumeId: "v1", Target: "/data"}},
		Command: []string{"sh", "-c", `set -- $(ls /data); echo "data: $*"`},
	})
	data := volumes.Dir(volDir).Path("cut")
	cutShort := func() {
		t.Helper()
		for _, name := range entries(t, data) {
			if err := os.RemoveAll(filepath.Join(data, name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(data, "..", copyMarker), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(data, "sub", "half"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Before the replica's first Prepare: a copy cut short by another.
	if _, err := volumes.Dir(volDir).Source("cut", "v1", nil); err != nil {
		t.Fatal(err)
	}
	cutShort()
	prepare(t, n.rt, rep)
	check := func(when string) {
		t.Helper()
		if got := entries(t, data); len(got) != 2 || got[0] != "seed" || got[1] != "sub" {
			t.Errorf("%s: volume holds %v; want [seed sub]", when, got)
		}
		if got := entries(t, filepath.Join(data, "sub")); len(got) != 0 {
			t.Errorf("%s: sub holds %v; want the half copy gone", when, got)
		}
		if _, err := os.Stat(filepath.Join(data, "..", copyMarker)); !os.IsNotExist(err) {
			t.Errorf("%s: marker: %v; want none", when, err)
		}
	}
	check("first Prepare")

	// Cut short again after the container was made: a restarted agent's
	// Prepare finds the container and still redoes the copy.
	cutShort()
	c, err := n.open(t, WithVolumesDir(volDir)).Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("prepare after a restart: %v", err)
	}
	check("Prepare after a restart")
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	wait(t, c)
	waitLog(t, rep, "data: seed sub")
}
