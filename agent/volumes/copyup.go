package volumes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	cfs "github.com/containerd/continuity/fs"
	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/internal/durable"
)

// Copy-up (docs/adr/0061-volumes.md): a volume mounted while empty is
// first filled with what the image holds at the mount's target, as
// Docker fills its volumes. What to copy is the runtime's to find; this
// file keeps the volume's side: copy only into an empty volume, one copy
// at a time, and never leave a copy cut short looking like a volume's
// data.

// copyMarker, beside a volume's _data, says a copy into _data began and
// did not end: _data then holds part of the image's content, which an
// empty-or-not test would take for the volume's own data and never
// complete. Whoever finds it clears _data and copies again.
const copyMarker = "copying"

// lockPoll is how often a Populate waiting for another one's copy into
// the same volume tries again.
const lockPoll = 50 * time.Millisecond

// Populate fills the volume directory data (a volume's _data, made by
// Source or Mounts) with fill when data is empty, as Docker does on a
// volume's mount, and returns whether fill ran. A volume holding anything
// is never written into, so a second replica, or the same one prepared
// again, never overwrites data. fill nil (the mount's volume_no_copy)
// copies nothing.
//
// A copy cut short (the agent killed, the node down) is found by its
// marker the next time: data is cleared and, unless fill is nil, copied
// again. A copy that fails clears what it copied. Copies into one volume
// take turns (a lock on data's parent, held across processes).
func Populate(ctx context.Context, data string, fill func(dst string) error, log *slog.Logger) (filled bool, err error) {
	parent := filepath.Dir(data)
	unlock, err := lockDir(ctx, parent)
	if err != nil {
		return false, err
	}
	defer unlock()
	marker := filepath.Join(parent, copyMarker)
	_, err = os.Lstat(marker)
	interrupted := err == nil
	switch {
	case interrupted:
		log.Warn("volume: a copy of the image's content into it was cut short: clearing it", "path", data)
		if err := clearDir(data); err != nil {
			return false, err
		}
		if fill == nil {
			return false, removeMarker(marker)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("volume %s: %w", data, err)
	case fill == nil:
		return false, nil
	default:
		empty, err := isEmpty(data)
		if err != nil || !empty {
			return false, err
		}
		if err := writeMarker(marker); err != nil {
			return false, err
		}
	}
	if err := fill(data); err != nil {
		// Back to empty, as before the copy; when that fails too the
		// marker stays and the next Populate clears it.
		if cerr := clearDir(data); cerr != nil {
			return false, errors.Join(err, cerr)
		}
		return false, errors.Join(err, removeMarker(marker))
	}
	// The copy is on disk before the marker goes: after a crash, either
	// the marker or the whole copy is there.
	if err := durable.SyncFS(data); err != nil {
		return false, err
	}
	return true, removeMarker(marker)
}

// lockDir takes an exclusive flock on dir, waiting (until ctx ends) while
// another holds it; flocks on separate opens exclude each other in one
// process too.
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("volume: lock %s: %w", dir, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("volume: lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("volume: wait for another copy into %s: %w", dir, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// isEmpty reports whether directory dir holds no entry.
func isEmpty(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, fmt.Errorf("volume: %w", err)
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); errors.Is(err, io.EOF) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("volume: read %s: %w", dir, err)
	}
	return false, nil
}

// clearDir removes everything in dir, keeping dir (a tmpfs may be
// mounted on it).
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("volume: clear %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("volume: clear %s: %w", dir, err)
		}
	}
	return nil
}

// writeMarker makes the copy marker durably: a crash right after must
// find it.
func writeMarker(path string) error {
	const text = "a copy of an image's content into _data began; an agent finding this clears _data and copies again\n"
	if err := durable.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("volume: write %s: %w", path, err)
	}
	return nil
}

// removeMarker removes the copy marker durably.
func removeMarker(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("volume: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir is durable.SyncDir with the package's error prefix.
func syncDir(dir string) error {
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("volume: %w", err)
	}
	return nil
}

// TreeStats is what a directory tree holds: its entries below the root
// (files, directories, symlinks, others) and its regular files' bytes.
type TreeStats struct {
	Entries int64
	Bytes   int64
}

// Measure counts what is under directory src, for an operator's log
// before a long copy.
func Measure(src string) (TreeStats, error) {
	var st TreeStats
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == src {
			return nil
		}
		st.Entries++
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			st.Bytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return TreeStats{}, fmt.Errorf("measure %s: %w", src, err)
	}
	return st, nil
}

// XattrSkips are the extended attributes a copy left out: how many, and
// the first one's error, for the log.
type XattrSkips struct {
	N     int
	First error
}

// CopyTree copies directory src's content into directory dst and gives
// dst src's owner, mode and times, as Docker's copy-up does (containerd's
// continuity CopyDir, which Docker uses too): regular files (sparse ones
// kept sparse, hard links kept linked), directories, symlinks as links,
// device nodes, fifos and sockets made anew; each with its owner, mode
// and times. Extended attributes are copied where the file system takes
// them: one it refuses (security.selinux where there is no SELinux) is
// left out, not an error, as Docker leaves it out.
func CopyTree(dst, src string) (XattrSkips, error) {
	var skips XattrSkips
	skip := func(_, _, key string, err error) error {
		if skips.N == 0 {
			skips.First = fmt.Errorf("xattr %q: %w", key, err)
		}
		skips.N++
		return nil
	}
	if err := cfs.CopyDir(dst, src, cfs.WithXAttrErrorHandler(skip)); err != nil {
		return skips, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return skips, nil
}
