package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/mount"
	cfs "github.com/containerd/continuity/fs"
	"github.com/containerd/errdefs"

	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
)

// Copy-up (docs/adr/0061-volumes.md): a volume the replica mounts that is
// empty when it is prepared gets what the image holds at the mount's
// target, with owners, modes, times, links and xattrs, as Docker's do:
// images such as grafana's own their data directory by a non-root user
// and fail on an empty root-owned one. It is read from the container's
// own snapshot, mounted read-only for the copy.

// copiedInto reports whether volume mount m takes the image's content: a
// named or anonymous volume on the node's disk, or a named type=tmpfs
// one (a tmpfs the agent mounts, filled again after each reboot, as
// Docker's). Not a type=none volume, whose device is the operator's
// (treated as a bind: never written into), nor an anonymous type=tmpfs
// one, which is the container's own tmpfs mount, made when it starts.
func copiedInto(m *api.Mount) bool {
	if !api.IsVolumeMount(m) {
		return false
	}
	switch m.GetVolumeOptions()[api.VolumeOptType] {
	case api.VolumeTypeNone:
		return false
	case api.VolumeTypeTmpfs:
		return m.GetSource() != ""
	}
	return true
}

// copyUp fills each empty volume in resolved (the spec's mounts made into
// node paths, resolveVolumes) from the image, unless its mount says
// volume_no_copy, before the container first starts. A volume holding
// anything is left alone (volumes.Populate), so copying again when the
// replica is prepared again changes nothing.
func (c *controller) copyUp(ctx context.Context, resolved []*api.Mount) error {
	if resolved == nil {
		return nil
	}
	for i, m := range c.rep.Task.GetSpec().GetMounts() {
		if !copiedInto(m) {
			continue
		}
		var fill func(string) error
		if !m.GetVolumeNoCopy() {
			fill = func(dst string) error { return c.copyImagePath(ctx, m, dst) }
		}
		if _, err := volumes.Populate(ctx, resolved[i].GetSource(), fill, c.rt.log); err != nil {
			return fmt.Errorf("replica %s: volume mount at %s: copy the image's content: %w", c.id, m.GetTarget(), err)
		}
	}
	return nil
}

// started reports whether the replica's container ctr has a task
// (running or ended): its volumes are in use, or were, and copying into
// one the replica emptied would be copying under its feet.
func (c *controller) started(ctx context.Context, ctr client.Container) (bool, error) {
	if _, err := ctr.Task(ctx, nil); err == nil {
		return true, nil
	} else if !errdefs.IsNotFound(err) {
		return false, fmt.Errorf("replica %s: %w", c.id, err)
	}
	return false, nil
}

// copyImagePath copies what the container's snapshot holds at m's target
// into dst. A target missing from the image, or not a directory, gives
// nothing to copy (the volume stays empty, as under Docker). Symlinks on
// the way to the target resolve inside the image, never on the node.
func (c *controller) copyImagePath(ctx context.Context, m *api.Mount, dst string) error {
	mounts, err := c.rt.client.SnapshotService(Snapshotter).Mounts(ctx, c.id)
	if err != nil {
		return fmt.Errorf("container snapshot: %w", err)
	}
	volume := m.GetSource()
	if volume == "" {
		volume = "(anonymous)"
	}
	log := c.rt.log.With("task_id", c.rep.Task.GetId(), "volume", volume, "target", m.GetTarget())
	return mount.WithReadonlyTempMount(ctx, mounts, func(root string) error {
		src, err := cfs.RootPath(root, m.GetTarget())
		if err != nil {
			return fmt.Errorf("resolve %s in the image: %w", m.GetTarget(), err)
		}
		fi, err := os.Stat(src)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
			log.DebugContext(ctx, "volume: nothing in the image at the target to copy")
			return nil
		}
		if err != nil {
			return fmt.Errorf("image's %s: %w", m.GetTarget(), err)
		}
		size, err := volumes.Measure(src)
		if err != nil {
			return err
		}
		// Logged before and after: a first start that takes long shows why.
		log.InfoContext(ctx, "volume: copying the image's content into the empty volume", "files", size.Entries, "bytes", size.Bytes, "path", dst)
		began := time.Now()
		skips, err := volumes.CopyTree(dst, src)
		if err != nil {
			return err
		}
		attrs := []any{"files", size.Entries, "bytes", size.Bytes, "duration", time.Since(began).Round(time.Millisecond)}
		if skips.N > 0 {
			attrs = append(attrs, "xattrs_left_out", skips.N, "first_xattr_error", skips.First)
		}
		log.InfoContext(ctx, "volume: copied the image's content", attrs...)
		return nil
	})
}
