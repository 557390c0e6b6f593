// Package volumes keeps a node's named volumes (docs/adr/0061-volumes.md):
// one directory per volume under the node's volumes dir (jacod
// --volumes-dir, DATA_DIR/volumes by default),
//
//	<dir>/<name>/id     the volume's cluster id, written when it is made
//	<dir>/<name>/_data  what replicas see (a tmpfs mounted there for
//	                    type=tmpfs)
//	<dir>/<name>/copying  while the image's content is copied into an
//	                    empty _data (copyup.go)
//
// made on the first use of the volume, never deleted when a replica using
// it goes, and deleted only when the cluster says the volume was removed
// (Node.removed_volumes) and the id file names that very volume: a volume
// removed and created again under the same name is never deleted by the
// first one's removal.
//
// The package knows nothing of runtimes: a runtime asks it for the path
// to bind at a volume mount's target (Source).
package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/api"
)

const (
	idFile  = "id"
	dataDir = "_data"
)

// Dir is a node's volumes dir.
type Dir string

// Path is where volume name's data is on the node (for an operator, and
// tests): <dir>/<name>/_data.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name, dataDir) }

// Source makes, when missing, the directory of named volume name (of
// cluster id id, with the local driver's opts) and returns the node path
// to bind at the mount's target. A type=none volume is its device, which
// must exist, as Docker's local driver requires; a type=tmpfs volume is a
// tmpfs mounted at its _data on first use (gone with a reboot, as
// Docker's). A directory holding another volume's id is refused: a volume
// of the same name was removed while the node was away, and its data is
// not this volume's.
func (d Dir) Source(name, id string, opts map[string]string) (string, error) {
	if d == "" {
		return "", errors.New("this node has no volumes dir (jacod --volumes-dir)")
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := api.CheckVolumeOptions(opts); err != nil {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	if opts[api.VolumeOptType] == api.VolumeTypeNone {
		dev := opts[api.VolumeOptDevice]
		if _, err := os.Stat(dev); err != nil {
			return "", fmt.Errorf("volume %s: device: %w", name, err)
		}
		return dev, nil
	}
	root := filepath.Join(string(d), name)
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	if err := claim(root, name, id); err != nil {
		return "", err
	}
	data := filepath.Join(root, dataDir)
	// 0755 root-owned, as Docker makes _data: the container's processes
	// reach it, the node's other users cannot reach root's 0700 parent.
	if err := os.Mkdir(data, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	if opts[api.VolumeOptType] == api.VolumeTypeTmpfs {
		if err := mountTmpfs(data, opts[api.VolumeOptO]); err != nil {
			return "", fmt.Errorf("volume %s: %w", name, err)
		}
	}
	return data, nil
}

// claim records id as root's volume, or checks that it is the one
// recorded. An empty id (a spec from before ids were filled) claims
// nothing and checks nothing.
func claim(root, name, id string) error {
	if id == "" {
		return nil
	}
	got, err := readID(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.WriteFile(filepath.Join(root, idFile), []byte(id+"\n"), 0o600); err != nil {
			return fmt.Errorf("volume %s: record its id: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("volume %s: %w", name, err)
	}
	if got != id {
		return fmt.Errorf("volume %s: %s holds the data of another volume of that name (id %s, removed while this node was away; this one is %s): move it away to use this volume",
			name, root, got, id)
	}
	return nil
}

// mountTmpfs mounts a tmpfs at data with the o= options, unless one is
// mounted there already.
func mountTmpfs(data, o string) error {
	mounted, err := mountinfo.Mounted(data)
	if err != nil || mounted {
		return err
	}
	if err := unix.Mount("tmpfs", data, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, strings.Join(api.VolumeMountOptions(o), ",")); err != nil {
		return fmt.Errorf("mount a tmpfs at %s: %w", data, err)
	}
	return nil
}

// Remove deletes volume ref's directory when it holds that volume (its id
// file names ref's id), unmounting a tmpfs at its _data first. A directory
// of another volume of the same name, or none, is left alone: removal is
// told again with every session message, so it must be idempotent.
func (d Dir) Remove(ref *api.VolumeRef) (removed bool, err error) {
	if d == "" || checkName(ref.GetName()) != nil || ref.GetId() == "" {
		return false, nil
	}
	root := filepath.Join(string(d), ref.GetName())
	got, err := readID(root)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("volume %s: %w", ref.GetName(), err)
	}
	if got != ref.GetId() {
		return false, nil
	}
	// Another generation of the volume (it moved away and back) is not
	// the copy the removal names (move.go).
	if g, err := generation(root); err != nil || g != ref.GetGeneration() {
		return false, err
	}
	data := filepath.Join(root, dataDir)
	if mounted, err := mountinfo.Mounted(data); err == nil && mounted {
		if err := unix.Unmount(data, unix.MNT_DETACH); err != nil {
			return false, fmt.Errorf("volume %s: unmount %s: %w", ref.GetName(), data, err)
		}
	}
	// The id file last: a removal cut short is done again with the next
	// session message.
	if err := os.RemoveAll(data); err != nil {
		return false, fmt.Errorf("volume %s: %w", ref.GetName(), err)
	}
	if err := os.RemoveAll(root); err != nil {
		return false, fmt.Errorf("volume %s: %w", ref.GetName(), err)
	}
	return true, nil
}

// Forget removes the directories of the volumes refs names (the node's
// removed_volumes), logging each one deleted and each failure.
func (d Dir) Forget(refs []*api.VolumeRef, log *slog.Logger) {
	for _, ref := range refs {
		removed, err := d.Remove(ref)
		switch {
		case err != nil:
			log.Warn("volume removed from the cluster: deleting its directory failed", "volume", ref.GetName(), "err", err)
		case removed:
			log.Info("volume removed from the cluster: directory deleted", "volume", ref.GetName())
		}
	}
}

// checkName refuses a name that is not one directory entry: the manager
// refuses such names, so one here did not come from it.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("volume name %q is not a volume name", name)
	}
	return nil
}

// anonymous is where a replica's anonymous volume number i is kept:
// in the replica's own directory, which goes with the replica.
func anonymous(replicaDir string, i int) (string, error) {
	p := filepath.Join(replicaDir, anonymousDir, strconv.Itoa(i), dataDir)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("anonymous volume: %w", err)
	}
	return p, nil
}
