package encryption

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteKeyFile stores key at path (mode 0600), atomically: a crash leaves
// either no file or the whole key.
func WriteKeyFile(path string, key Key) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".dek-*")
	if err != nil {
		return fmt.Errorf("create key file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(key[:]); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install key file %s: %w", path, err)
	}
	return syncDir(dir)
}

// ReadKeyFile loads a key written by WriteKeyFile.
func ReadKeyFile(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("read key file: %w", err)
	}
	var k Key
	if len(b) != len(k) {
		return Key{}, fmt.Errorf("key file %s holds %d bytes, want %d", path, len(b), len(k))
	}
	copy(k[:], b)
	return k, nil
}

func syncDir(dir string) error {
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
