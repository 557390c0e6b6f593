package containerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/jaco-project/jaco/api"
)

// defaultTmpfsMode is a tmpfs mount's root mode when the spec sets none:
// the kernel's own default, world-writable with the sticky bit, as /tmp.
const defaultTmpfsMode = 0o1777

// prepareMounts refuses a mount that cannot be made, before anything else is
// made for the replica, and makes the missing source directory of a bind
// that asks for it (create_host_path, mode 0755 as Docker makes it). A
// missing source without it is left to fail the task's creation, naming
// the path.
func prepareMounts(mounts []*api.Mount) error {
	for _, m := range mounts {
		if !filepath.IsAbs(m.GetTarget()) {
			return fmt.Errorf("mount %s:%s: target must be an absolute path", m.GetSource(), m.GetTarget())
		}
		switch m.GetType() {
		case api.MountType_MOUNT_TYPE_TMPFS:
			if m.GetSource() != "" {
				return fmt.Errorf("tmpfs mount at %s: a tmpfs has no source (got %q)", m.GetTarget(), m.GetSource())
			}
			if m.GetTmpfsSizeBytes() < 0 {
				return fmt.Errorf("tmpfs mount at %s: size %d: want a size in bytes", m.GetTarget(), m.GetTmpfsSizeBytes())
			}
		case api.MountType_MOUNT_TYPE_UNSPECIFIED, api.MountType_MOUNT_TYPE_BIND:
			if !filepath.IsAbs(m.GetSource()) {
				return fmt.Errorf("mount %s:%s: source and target must be absolute paths", m.GetSource(), m.GetTarget())
			}
			if !m.GetCreateHostPath() {
				continue
			}
			if _, err := os.Stat(m.GetSource()); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(m.GetSource(), 0o755); err != nil {
					return fmt.Errorf("mount %s:%s: create host path: %w", m.GetSource(), m.GetTarget(), err)
				}
			} else if err != nil {
				return fmt.Errorf("mount %s:%s: %w", m.GetSource(), m.GetTarget(), err)
			}
		default:
			return fmt.Errorf("mount at %s: type %s is not one this runtime makes", m.GetTarget(), m.GetType())
		}
	}
	return nil
}

// specMounts are the spec's mounts in the container. A bind is the node's
// path, read-write unless readonly. A tmpfs gets Docker's options for
// tmpfs mounts (--tmpfs and --mount type=tmpfs alike): nosuid, nodev and
// noexec, so nothing on it runs or opens a device; size= and mode= come
// from the mount.
func specMounts(mounts []*api.Mount) []specs.Mount {
	var out []specs.Mount
	for _, m := range mounts {
		mode := "rw"
		if m.GetReadonly() {
			mode = "ro"
		}
		if m.GetType() == api.MountType_MOUNT_TYPE_TMPFS {
			perm := m.GetTmpfsMode()
			if perm == 0 {
				perm = defaultTmpfsMode
			}
			opts := []string{"nosuid", "nodev", "noexec", mode, fmt.Sprintf("mode=%o", perm)}
			if size := m.GetTmpfsSizeBytes(); size > 0 {
				opts = append(opts, fmt.Sprintf("size=%d", size))
			}
			out = append(out, specs.Mount{Destination: m.GetTarget(), Type: "tmpfs", Source: "tmpfs", Options: opts})
			continue
		}
		out = append(out, specs.Mount{
			Destination: m.GetTarget(),
			Type:        "bind",
			Source:      m.GetSource(),
			Options:     []string{"rbind", "rprivate", mode},
		})
	}
	return out
}

// roFile is a node file bind-mounted read-only at dest.
func roFile(src, dest string) specs.Mount {
	return specs.Mount{Destination: dest, Type: "bind", Source: src, Options: []string{"rbind", "rprivate", "ro"}}
}
