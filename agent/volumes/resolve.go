package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/moby/sys/mountinfo"

	"github.com/jaco-project/jaco/api"
)

// anonymousDir is the directory of a replica's dir that anonymous makes
// its volumes in.
const anonymousDir = "volumes"

// Mounts returns a replica's mounts with each volume mount made into what
// a runtime mounts, the same for every runtime (containers and hook
// bundles): a named volume is a bind of its directory (Source, made on
// first use), a type=none volume a bind of its device, an anonymous one a
// bind of a directory in replicaDir (anonymous), and an anonymous
// type=tmpfs one a tmpfs mount of the replica's own. out is nil when no
// mount is a volume mount, so a caller keeps the spec's own.
//
// owned are the node directories the replica may take as its own: a named
// volume's directory this call made (its first use on the node, or a
// tmpfs volume mounted anew) and every anonymous volume's (the replica's
// alone). A runtime that has no image to copy an owner from (Docker gives
// a new volume the owner of the image's directory at the target) gives
// them the replica's user; a volume already in use keeps its owner.
func (d Dir) Mounts(replicaDir string, mounts []*api.Mount) (out []*api.Mount, owned []string, err error) {
	for i, m := range mounts {
		if !api.IsVolumeMount(m) {
			continue
		}
		if out == nil {
			out = slices.Clone(mounts)
		}
		bind := &api.Mount{Type: api.MountType_MOUNT_TYPE_BIND, Target: m.GetTarget(), Readonly: m.GetReadonly()}
		opts := m.GetVolumeOptions()
		var own bool
		switch {
		case m.GetSource() != "":
			own = d.unmade(m.GetSource(), opts)
			bind.Source, err = d.Source(m.GetSource(), m.GetVolumeId(), opts)
		case opts[api.VolumeOptType] == api.VolumeTypeTmpfs:
			out[i] = &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: m.GetTarget(), Readonly: m.GetReadonly()}
			continue
		case opts[api.VolumeOptType] == api.VolumeTypeNone:
			bind.Source = opts[api.VolumeOptDevice]
		default:
			own = true
			bind.Source, err = anonymous(replicaDir, i)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("volume mount at %s: %w", m.GetTarget(), err)
		}
		if own {
			owned = append(owned, bind.Source)
		}
		out[i] = bind
	}
	return out, owned, nil
}

// unmade reports whether Source would make named volume name's data
// directory now: it does not exist, or it is a type=tmpfs volume's with
// no tmpfs mounted (the node rebooted). A type=none volume is the
// operator's device, never made.
func (d Dir) unmade(name string, opts map[string]string) bool {
	if d == "" || checkName(name) != nil || opts[api.VolumeOptType] == api.VolumeTypeNone {
		return false
	}
	data := d.Path(name)
	if _, err := os.Lstat(data); errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if opts[api.VolumeOptType] == api.VolumeTypeTmpfs {
		mounted, err := mountinfo.Mounted(data)
		return err == nil && !mounted
	}
	return false
}

// RemoveAnonymous deletes the anonymous volumes anonymous made in
// replicaDir: they go with their replica (docs/adr/0061-volumes.md).
func RemoveAnonymous(replicaDir string) error {
	if err := os.RemoveAll(filepath.Join(replicaDir, anonymousDir)); err != nil {
		return fmt.Errorf("anonymous volumes: %w", err)
	}
	return nil
}
