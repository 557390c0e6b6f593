package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// TestConsistencyFlag: --consistency overrides each read's default, and a
// value that is neither local nor linearizable is a usage mistake that
// calls nothing.
func TestConsistencyFlag(t *testing.T) {
	local, lin := api.ReadConsistency_READ_CONSISTENCY_LOCAL, api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE
	for _, c := range []struct {
		flag     string
		def, got api.ReadConsistency
	}{
		{"", local, local},
		{"", lin, lin},
		{"local", lin, local},
		{"linearizable", local, lin},
	} {
		g := &globals{consistency: c.flag}
		if got := g.readConsistency(c.def); got != c.got {
			t.Errorf("--consistency %q over a default of %v reads %v, want %v", c.flag, c.def, got, c.got)
		}
	}

	var stderr bytes.Buffer
	code := run([]string{"--data-dir", t.TempDir(), "--consistency", "eventual", "node", "ls"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `--consistency "eventual": want local or linearizable`) {
		t.Fatalf("--consistency eventual: exit %d, stderr %q; want 2 and the usage error", code, stderr.String())
	}
}
