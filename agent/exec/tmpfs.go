package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// The replica's files live in a tmpfs of its own, mounted at
// Replica.FilesDir: secrets and configs never touch a disk, and
// unmounting it forgets them at once. Kinds are kept apart in two
// directories, each file at File.Rel below its kind's.
const (
	filesDirName   = "files"
	secretsDirName = "secrets"
	configsDirName = "configs"
	// filesSlack is room the tmpfs has beyond the files' pages.
	filesSlack = 64 << 10
)

// FilesDir is where runtimes mount the replica's tmpfs (in Dir).
func (r Replica) FilesDir() string { return filepath.Join(r.Dir, filesDirName) }

// SecretsHostDir and ConfigsHostDir are the directories of the replica's
// tmpfs holding its secrets and its configs (what hook replicas get in
// EnvSecretsDir and EnvConfigsDir).
func (r Replica) SecretsHostDir() string { return filepath.Join(r.FilesDir(), secretsDirName) }
func (r Replica) ConfigsHostDir() string { return filepath.Join(r.FilesDir(), configsDirName) }

// HostPath is where f is on the node, in the replica's tmpfs.
func (r Replica) HostPath(f File) string {
	if f.Secret {
		return filepath.Join(r.SecretsHostDir(), f.Rel())
	}
	return filepath.Join(r.ConfigsHostDir(), f.Rel())
}

// WriteFiles mounts the replica's tmpfs (mode 0700, sized for its files)
// unless it is mounted already, and writes every file of Files there with
// its mode and owner. Writing again is harmless, so a Prepare after an
// agent restart puts back files whose tmpfs went away. A replica without
// files gets no tmpfs.
func (r Replica) WriteFiles() error {
	if len(r.Files) == 0 {
		return nil
	}
	dir := r.FilesDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("replica files: %w", err)
	}
	mounted, err := mountinfo.Mounted(dir)
	if err != nil {
		return fmt.Errorf("replica files: %w", err)
	}
	if !mounted {
		size, inodes := filesDirSize(r.Files)
		opts := fmt.Sprintf("mode=0700,size=%d,nr_inodes=%d", size, inodes)
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
			return fmt.Errorf("replica files: mount tmpfs at %s: %w", dir, err)
		}
	}
	for _, f := range r.Files {
		if err := writeFile(r.HostPath(f), f); err != nil {
			return fmt.Errorf("replica files: %s %s: %w", f.kind(), f.Name, err)
		}
	}
	return nil
}

func writeFile(p string, f File) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = w.Write(f.Data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// The owner first: chown clears set-id bits a mode may carry.
	if err := os.Lchown(p, int(f.UID), int(f.GID)); err != nil {
		return err
	}
	return os.Chmod(p, f.Mode)
}

// RemoveFiles unmounts the replica's tmpfs, which drops its files, and
// removes the mount point. Nothing mounted is fine.
func (r Replica) RemoveFiles() error {
	dir := r.FilesDir()
	// A mount stacked twice (a crash between mount and record) comes
	// off layer by layer.
	for range 8 {
		mounted, err := mountinfo.Mounted(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("replica files: %w", err)
		}
		if !mounted {
			break
		}
		if err := unix.Unmount(dir, 0); err != nil {
			if !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("replica files: unmount %s: %w", dir, err)
			}
			// Something still has it open: detach it from the tree now,
			// the kernel frees it once the last user is gone.
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("replica files: unmount %s: %w", dir, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("replica files: %w", err)
	}
	return nil
}

// filesDirSize is the tmpfs size for files (their pages, one more each,
// and slack) and its inode count (files, their directories, slack).
func filesDirSize(files []File) (size, inodes int) {
	page := os.Getpagesize()
	dirs := map[string]bool{}
	size = filesSlack
	for _, f := range files {
		size += (len(f.Data)/page + 2) * page
		for d := filepath.Dir(f.Rel()); d != "." && d != "/"; d = filepath.Dir(d) {
			dirs[f.kind()+"/"+d] = true
		}
	}
	return size, len(files) + len(dirs) + 16
}
