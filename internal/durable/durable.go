// Package durable writes files so that a crash leaves either the old
// content or the new, never a torn mix: write a synced temporary file next
// to the target, rename it over the target, then sync the directory so the
// rename itself survives.
package durable

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteTemp writes data with mode to a new temporary file in dir (named
// after name) and syncs it. It returns the temporary path whenever the file
// was created, also on error, so the caller can remove it.
func WriteTemp(dir, name string, data []byte, mode os.FileMode) (string, error) {
	return writeTemp(dir, name, mode, data)
}

func writeTemp(dir, name string, mode os.FileMode, parts ...[]byte) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return tmp, fmt.Errorf("chmod %s: %w", tmp, err)
	}
	w := &writeBack{f: f}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			f.Close()
			return tmp, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return tmp, fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return tmp, fmt.Errorf("close %s: %w", tmp, err)
	}
	return tmp, nil
}

// WriteFile replaces path with data (mode), atomically and durably.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return WriteFileParts(path, mode, data)
}

// WriteFileParts is WriteFile of the parts' concatenation, written part
// after part, so a large file framed by small headers needs no copy that
// joins them.
func WriteFileParts(path string, mode os.FileMode, parts ...[]byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, filepath.Base(path), mode, parts...)
	if tmp != "" {
		defer os.Remove(tmp) // a no-op once renamed
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir makes the entries of dir (creations, renames) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// SyncFS flushes the whole file system holding path (syncfs(2)): what a
// tree copy wrote, directories and metadata included, which syncing each
// file would not cover.
func SyncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sync file system of %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("sync file system of %s: %w", path, err)
	}
	return nil
}
