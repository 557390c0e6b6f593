package main

import (
	"path/filepath"
	"testing"
)

// jaco restore passes jacod restore's exit status on: 2 for how it was
// called, 1 for what it could not do.
func TestRestoreExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.backup")
	if code := run([]string{"restore", "--data-dir", t.TempDir(), missing}); code != 2 {
		t.Errorf("restore without --advertise-addr: exit %d, want 2", code)
	}
	if code := run([]string{"restore", "--data-dir", t.TempDir(), "--advertise-addr", "127.0.0.1:7000", missing}); code != 1 {
		t.Errorf("restore of a missing file: exit %d, want 1", code)
	}
}
