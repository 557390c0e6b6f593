package ca

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestNodeFilesRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	c := newTestCA(t, testCluster)
	certPEM, keyPEM := c.issue(t, "node-1", RoleWorker)

	if _, _, _, err := LoadNodeFiles(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadNodeFiles on a missing dir: err = %v, want ErrNotExist", err)
	}
	if err := SaveNodeFiles(dir, c.certPEM, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	gotCA, gotCert, gotKey, err := LoadNodeFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotCA, c.certPEM) || !bytes.Equal(gotCert, certPEM) || !bytes.Equal(gotKey, keyPEM) {
		t.Error("loaded files differ from saved ones")
	}

	for name, want := range map[string]os.FileMode{KeyFile: 0o600, CertFile: 0o644, CAFile: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}

	// Saving again replaces the files and leaves no temporary files behind.
	certPEM2, keyPEM2 := c.issue(t, "node-1", RoleManager)
	if err := SaveNodeFiles(dir, c.certPEM, certPEM2, keyPEM2); err != nil {
		t.Fatal(err)
	}
	_, gotCert, gotKey, err = LoadNodeFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotCert, certPEM2) || !bytes.Equal(gotKey, keyPEM2) {
		t.Error("second save did not replace the files")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("dir holds %d entries, want 3: %v", len(entries), entries)
	}

	if err := os.Remove(filepath.Join(dir, KeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LoadNodeFiles(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadNodeFiles without a key: err = %v, want ErrNotExist", err)
	}
}
