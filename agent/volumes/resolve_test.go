package volumes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// Mounts resolves volume mounts as every runtime mounts them, and names
// as the replica's own a named volume's directory only when it made it,
// every anonymous one, and never a type=none device.
func TestMountsOwnsWhatItMade(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "volumes"))
	replica := t.TempDir()
	dev := t.TempDir()
	mounts := []*api.Mount{
		{Source: "/srv/x", Target: "/x"},
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db", VolumeId: "v1", Target: "/db"},
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/scratch"},
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/fast", VolumeOptions: map[string]string{"type": "tmpfs"}},
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "dev", Target: "/dev0",
			VolumeOptions: map[string]string{"type": "none", "o": "bind", "device": dev}},
	}
	out, owned, err := d.Mounts(replica, mounts)
	if err != nil {
		t.Fatal(err)
	}
	anon := filepath.Join(replica, "volumes", "2", "_data")
	want := []*api.Mount{
		mounts[0],
		{Type: api.MountType_MOUNT_TYPE_BIND, Source: d.Path("db"), Target: "/db"},
		{Type: api.MountType_MOUNT_TYPE_BIND, Source: anon, Target: "/scratch"},
		{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/fast"},
		{Type: api.MountType_MOUNT_TYPE_BIND, Source: dev, Target: "/dev0"},
	}
	for i := range want {
		if out[i].String() != want[i].String() {
			t.Errorf("mount %d = %v, want %v", i, out[i], want[i])
		}
	}
	if !slices.Equal(owned, []string{d.Path("db"), anon}) {
		t.Errorf("owned = %v, want the new volume and the anonymous one", owned)
	}
	_, owned, err = d.Mounts(replica, mounts)
	if err != nil || !slices.Equal(owned, []string{anon}) {
		t.Errorf("again: owned = %v, %v; want the anonymous one only", owned, err)
	}
	if out, owned, err := d.Mounts(replica, mounts[:1]); out != nil || owned != nil || err != nil {
		t.Errorf("no volume mounts: %v, %v, %v; want nothing", out, owned, err)
	}
	if err := RemoveAnonymous(replica); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(replica, "volumes")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("anonymous volumes after RemoveAnonymous: %v; want none", err)
	}
}
