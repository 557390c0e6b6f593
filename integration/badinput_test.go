package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput checks that mistakes in how the tools are called are told
// apart from a daemon's refusal: exit 2 and "error: usage:" for the
// former, exit 1 for the latter, one line each, so scripts can branch.
func TestBadInput(t *testing.T) {
	t.Parallel()
	noDaemon := t.TempDir() // a data dir no daemon serves
	for _, tc := range []struct {
		name string
		args []string
		code int
		word string
	}{
		{"unknown flag", []string{"--bogus-flag"}, 2, "usage"},
		{"no daemon behind the socket", []string{"--data-dir", noDaemon, "cluster", "status"}, 1, "unavailable"},
		// Checked before dialing: no daemon is needed to say the flag is wrong.
		{"unknown output format", []string{"--data-dir", noDaemon, "cluster", "status", "--format", "yaml"}, 2, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, jaco(nil, tc.args...), tc.code, tc.word)
		})
	}

	t.Run("jacod bad listen address", func(t *testing.T) {
		t.Parallel()
		r := run(jacodBin, nil, "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen-addr", "nope")
		checkNoRace(t, "jacod", r.stderr)
		if r.code <= 0 {
			t.Errorf("jacod --listen-addr nope: exit code %d, want a failure", r.code)
		}
		if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 1 || lines[0] == "" {
			t.Errorf("jacod --listen-addr nope: stderr %q, want one line", r.stderr)
		}
	})

	// A node name the leader would refuse stops jacod at start, and the
	// refusal shows the name escaped, on one line.
	t.Run("jacod bad node name", func(t *testing.T) {
		t.Parallel()
		r := run(jacodBin, nil, "--data-dir", filepath.Join(t.TempDir(), "data"),
			"--listen-addr", "127.0.0.1:0", "--node-name", "w\x1b[2J\nfake")
		checkNoRace(t, "jacod", r.stderr)
		if r.code <= 0 {
			t.Errorf("jacod --node-name with an escape sequence: exit code %d, want a failure", r.code)
		}
		if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(r.stderr, "--node-name") || strings.Contains(r.stderr, "\x1b") {
			t.Errorf("jacod --node-name with an escape sequence: stderr %q, want one line naming --node-name, the name escaped", r.stderr)
		}
	})
}
