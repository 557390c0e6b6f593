package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// A volume directory holding another volume's id (one of the same name
// removed while the node was away) is refused, naming both ids, and a
// volumes dir that is not set refuses, naming the flag.
func TestVolumeOfAnotherIDRefused(t *testing.T) {
	dir := Dir(t.TempDir())
	if _, err := dir.Source("db-data", "old", nil); err != nil {
		t.Fatal(err)
	}
	_, err := dir.Source("db-data", "new", nil)
	if err == nil || !strings.Contains(err.Error(), "id old") || !strings.Contains(err.Error(), "this one is new") {
		t.Fatalf("source of a reused name: %v; want both ids named", err)
	}
	if _, err := Dir("").Source("db-data", "x", nil); err == nil || !strings.Contains(err.Error(), "--volumes-dir") {
		t.Fatalf("no volumes dir: %v; want the flag named", err)
	}
}

// A removal deletes the directory of the volume it names only, and is
// idempotent; a type=none volume is its device, which must exist.
func TestRemoveOnlyThatVolume(t *testing.T) {
	dir := Dir(t.TempDir())
	data, err := dir.Source("v", "id1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []*api.VolumeRef{{Id: "id0", Name: "v"}, {Id: "id1", Name: "w"}, {Id: "", Name: "v"}, {Id: "id1", Name: "../v"}} {
		if removed, err := dir.Remove(ref); removed || err != nil {
			t.Fatalf("remove %v: %v, %v; want nothing removed", ref, removed, err)
		}
	}
	for i := range 2 {
		removed, err := dir.Remove(&api.VolumeRef{Id: "id1", Name: "v"})
		if err != nil || removed != (i == 0) {
			t.Fatalf("remove #%d: %v, %v; want removed the first time only", i+1, removed, err)
		}
	}
	if _, err := os.Stat(filepath.Dir(data)); !os.IsNotExist(err) {
		t.Fatalf("volume directory after removal: %v; want it gone", err)
	}
	dev := t.TempDir()
	if got, err := dir.Source("b", "id2", map[string]string{"type": "none", "o": "bind", "device": dev}); err != nil || got != dev {
		t.Fatalf("bind volume source %q, %v; want %s", got, err, dev)
	}
	if _, err := dir.Source("b", "id2", map[string]string{"type": "none", "o": "bind", "device": filepath.Join(dev, "missing")}); err == nil {
		t.Fatal("a bind volume of a missing device: no error")
	}
	if _, err := dir.Source("../x", "id3", nil); err == nil || !strings.Contains(err.Error(), "not a volume name") {
		t.Fatalf("a name with a slash: %v; want refused", err)
	}
}
