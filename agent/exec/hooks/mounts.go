package hooks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
)

// Mounts of a hook replica (docs/adr/0059, docs/adr/0061-volumes.md): the
// spec's binds, tmpfs mounts and volumes, as a container has them, made in
// the replica's own mount namespace (sandbox.enter) over the node's own
// paths. Prepare makes what they need on the node (volume directories,
// create_host_path sources) and records them in Dir; every namespace of
// the replica is made from that record.

// mountsFile records the replica's mounts (Prepare → everything else).
const mountsFile = "hooks-mounts.json"

// defaultTmpfsMode is a tmpfs mount's root mode when the spec sets none:
// the kernel's own default, as /tmp, and the containerd runtime's.
const defaultTmpfsMode = 0o1777

// mountSpec is one mount of the replica's namespace: a bind of Source (a
// node path: a bind's source, a volume's directory) or a tmpfs.
type mountSpec struct {
	Target   string `json:"target"`
	Source   string `json:"source,omitempty"`
	Tmpfs    bool   `json:"tmpfs,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Mode     uint32 `json:"mode,omitempty"`
	Readonly bool   `json:"readonly,omitempty"`
}

// volumesDir is the node's volumes dir as agent/volumes reads it.
func (c *controller) volumesDir() volumes.Dir { return volumes.Dir(c.rt.volumesDir) }

// checkMountTargets refuses, before Prepare makes anything, a mount the
// replica could not get. A target must exist on the node, a directory
// unless a file is bound there: a bundle's "root file system" is the
// node's, and making directories on it is not the runtime's to do (as
// for workdir); a target below another mount's target is inside that
// mount, and is made there when missing. No target may hide the
// replica's own directory (its bundle and records) or /proc (how the
// namespace is made).
func checkMountTargets(mounts []*api.Mount, replicaDir string) error {
	replicaDir = filepath.Clean(replicaDir)
	resolvedReplicaDir := resolved(replicaDir)
	for _, m := range mounts {
		t := filepath.Clean(m.GetTarget())
		if !filepath.IsAbs(t) || t == "/" {
			return fmt.Errorf("mount target %q: want an absolute path other than /", m.GetTarget())
		}
		// The kernel mounts where a symlink leads.
		for _, p := range []string{t, resolved(t)} {
			if within(replicaDir, p) || within(resolvedReplicaDir, p) || within(p, "/proc") {
				return fmt.Errorf("mount target %s would hide %s, which the replica's processes need", t, cover(p, replicaDir))
			}
		}
		if nested(t, mounts) {
			continue
		}
		st, err := os.Stat(t)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("mount target %s does not exist on this node: a hook bundle's mounts go over the node's own paths, which the runtime does not create (make it on the node first)", t)
		}
		if err != nil {
			return fmt.Errorf("mount target: %w", err)
		}
		if wantDir := !bindsFile(m); st.IsDir() != wantDir {
			return fmt.Errorf("mount target %s: want a %s, as what is mounted there", t, map[bool]string{true: "directory", false: "file"}[wantDir])
		}
	}
	return nil
}

// resolved is path with its symlinks followed, as far as it exists.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

func cover(target, replicaDir string) string {
	if within(target, "/proc") {
		return "/proc"
	}
	return replicaDir
}

// nested reports whether target lies below another mount's target.
func nested(target string, mounts []*api.Mount) bool {
	return slices.ContainsFunc(mounts, func(o *api.Mount) bool {
		ot := filepath.Clean(o.GetTarget())
		return ot != target && within(target, ot)
	})
}

// bindsFile reports whether m binds a file (its source exists and is no
// directory), which needs a file as its target.
func bindsFile(m *api.Mount) bool {
	if t := m.GetType(); t != api.MountType_MOUNT_TYPE_UNSPECIFIED && t != api.MountType_MOUNT_TYPE_BIND {
		return false
	}
	st, err := os.Stat(m.GetSource())
	return err == nil && !st.IsDir()
}

// prepareMounts makes what the spec's mounts need on the node, resolving
// volume mounts as every runtime does (agent/volumes: a named volume's
// directory on first use, an anonymous one in Dir), and records them. A
// directory the replica may take as its own (a volume made now, or
// anonymous) is given to the spec's user, when it names one: there is no
// image to take an owner from, and a root-owned volume would be one the
// replica's user cannot write.
func (c *controller) prepareMounts(p proc) ([]mountSpec, error) {
	mounts := c.rep.Task.GetSpec().GetMounts()
	resolved, owned, err := c.volumesDir().Mounts(c.rep.Dir, mounts)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", c.id(), err)
	}
	if resolved != nil {
		mounts = resolved
	}
	if p.Cred != nil {
		for _, dir := range owned {
			if err := os.Chown(dir, int(p.Cred.UID), int(p.Cred.GID)); err != nil {
				return nil, fmt.Errorf("replica %s: give volume %s to its user: %w", c.id(), dir, err)
			}
		}
	}
	var specs []mountSpec
	for _, m := range mounts {
		ms := mountSpec{Target: filepath.Clean(m.GetTarget()), Readonly: m.GetReadonly()}
		switch m.GetType() {
		case api.MountType_MOUNT_TYPE_TMPFS:
			ms.Tmpfs, ms.Size, ms.Mode = true, m.GetTmpfsSizeBytes(), m.GetTmpfsMode()
			if ms.Mode == 0 {
				ms.Mode = defaultTmpfsMode
			}
		case api.MountType_MOUNT_TYPE_UNSPECIFIED, api.MountType_MOUNT_TYPE_BIND:
			ms.Source = m.GetSource()
			if !filepath.IsAbs(ms.Source) {
				return nil, fmt.Errorf("replica %s: mount %s:%s: the source must be an absolute path", c.id(), ms.Source, ms.Target)
			}
			if err := createHostPath(m); err != nil {
				return nil, fmt.Errorf("replica %s: %w", c.id(), err)
			}
		default:
			return nil, fmt.Errorf("replica %s: mount at %s: type %s is not one this runtime makes", c.id(), m.GetTarget(), m.GetType())
		}
		specs = append(specs, ms)
	}
	// Parents first, as Docker orders them: a mount inside another is
	// made on top of it.
	slices.SortStableFunc(specs, func(a, b mountSpec) int {
		return strings.Count(a.Target, "/") - strings.Count(b.Target, "/")
	})
	if err := writeJSON(c.path(mountsFile), specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// createHostPath makes the missing source directory of a bind that asks
// for it (create_host_path, 0755 as Docker and the containerd runtime
// make it). A missing source without it fails when the namespace is made,
// naming the path.
func createHostPath(m *api.Mount) error {
	if !m.GetCreateHostPath() {
		return nil
	}
	if _, err := os.Stat(m.GetSource()); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(m.GetSource(), 0o755); err != nil {
		return fmt.Errorf("mount %s:%s: create host path: %w", m.GetSource(), m.GetTarget(), err)
	}
	return nil
}

// readMounts returns the mounts Prepare recorded; none when the spec has
// none.
func (c *controller) readMounts() ([]mountSpec, error) {
	if len(c.rep.Task.GetSpec().GetMounts()) == 0 {
		return nil, nil
	}
	ms, ok, err := readRecord[[]mountSpec](c.path(mountsFile))
	if err != nil {
		return nil, err
	}
	if !ok {
		// Started by a jacod from before bundles had mounts: it runs
		// without them.
		if started, err := c.started(); err != nil || started {
			return nil, err
		}
		return nil, fmt.Errorf("replica %s: its mounts are not made (prepare first)", c.id())
	}
	return ms, nil
}

// removeMounts deletes the record and the replica's anonymous volumes;
// named volumes stay on the node (docs/adr/0061-volumes.md). The mounts
// themselves went with the replica's last process.
func (c *controller) removeMounts() error {
	if err := volumes.RemoveAnonymous(c.rep.Dir); err != nil {
		return fmt.Errorf("remove replica %s: %w", c.id(), err)
	}
	return nil
}

// runningMountNS opens the mount namespace the replica runs in: its
// shim's, or launch's when the shim was killed outright; nil when
// neither runs (an Exec command then makes a namespace of its own).
func (c *controller) runningMountNS() *os.File {
	for _, name := range []string{shimFile, childFile} {
		rec, ok, err := readProc(c.path(name))
		if err != nil || !ok {
			continue
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", rec.Pid))
		if err != nil {
			continue
		}
		// Checked once open: the descriptor then holds the namespace of
		// the process recorded, not of a later one given its pid.
		if rec.alive() {
			return f
		}
		f.Close()
	}
	return nil
}

// makeMounts mounts ms in the calling thread's mount namespace, which
// must be its own. Every bind's source is opened first and bound through
// its descriptor: a source is a node path, and a mount made earlier may
// cover it.
func makeMounts(ms []mountSpec) error {
	fds := make([]int, len(ms))
	for i := range fds {
		fds[i] = -1
	}
	defer func() {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, m := range ms {
		if m.Tmpfs {
			continue
		}
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("mount %s:%s: source: %w", m.Source, m.Target, &fs.PathError{Op: "open", Path: m.Source, Err: err})
		}
		fds[i] = fd
	}
	for i, m := range ms {
		if err := ensureTarget(m, ms[:i], fds[i]); err != nil {
			return err
		}
		if err := mountOne(m, fds[i]); err != nil {
			return err
		}
	}
	return nil
}

// ensureTarget makes a missing target that lies inside an earlier mount
// (so not on the node's own file system); any other must exist.
func ensureTarget(m mountSpec, earlier []mountSpec, src int) error {
	if _, err := os.Lstat(m.Target); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !slices.ContainsFunc(earlier, func(e mountSpec) bool { return within(m.Target, e.Target) }) {
		return fmt.Errorf("mount target %s does not exist on this node", m.Target)
	}
	var st unix.Stat_t
	if !m.Tmpfs && unix.Fstat(src, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err != nil {
			return fmt.Errorf("mount target: %w", err)
		}
		f, err := os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("mount target: %w", err)
		}
		return f.Close()
	}
	if err := os.MkdirAll(m.Target, 0o755); err != nil {
		return fmt.Errorf("mount target: %w", err)
	}
	return nil
}

// mountOne makes one mount. A tmpfs gets Docker's options for tmpfs
// mounts (nosuid, nodev, noexec; size and mode from the spec), as the
// containerd runtime gives them. A bind is recursive and private, as
// Docker's default, and a read-only one is read-only all the way down
// where the kernel can (mount_setattr, Linux 5.12), else at its top.
func mountOne(m mountSpec, src int) error {
	if m.Tmpfs {
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if m.Readonly {
			flags |= unix.MS_RDONLY
		}
		data := fmt.Sprintf("mode=%o", m.Mode)
		if m.Size > 0 {
			data += fmt.Sprintf(",size=%d", m.Size)
		}
		if err := unix.Mount("tmpfs", m.Target, "tmpfs", flags, data); err != nil {
			return fmt.Errorf("mount a tmpfs at %s: %w", m.Target, err)
		}
		return nil
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", src), m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	if err := unix.Mount("", m.Target, "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", m.Target, err)
	}
	if !m.Readonly {
		return nil
	}
	err := unix.MountSetattr(-1, m.Target, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if errors.Is(err, unix.ENOSYS) {
		// A remount sets every per-mount flag: keep the source's.
		var st unix.Statfs_t
		if err := unix.Statfs(m.Target, &st); err != nil {
			return fmt.Errorf("read-only %s: %w", m.Target, err)
		}
		keep := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
		err = unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|keep, "")
	}
	if err != nil {
		return fmt.Errorf("make %s read-only: %w", m.Target, err)
	}
	return nil
}
