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
		{"unknown subcommand", []string{"--data-dir", noDaemon, "service", "lss"}, 2, "usage"},
		{"server address that is none", []string{"--server", "node1:http", "service", "ls"}, 2, "usage"},
		{"no daemon behind the socket", []string{"--data-dir", noDaemon, "cluster", "status"}, 1, "unavailable"},
		// Checked before dialing: no daemon is needed to say the flag is wrong.
		{"unknown output format", []string{"--data-dir", noDaemon, "cluster", "status", "--format", "yaml"}, 2, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, jaco(nil, tc.args...), tc.code, tc.word)
		})
	}

	// Rows only a daemon can refuse: exit 1 with the reason word, and the
	// service as it was.
	t.Run("refused by the daemon", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, "badinput")
		d.initQuiet()
		bundle := writeBundle(t, t.TempDir(), "sleep 600")
		wantOK(t, d.jaco("service", "create", "-d", "--name", "web", "--replicas", "0", "--bundle", bundle))
		before := wantOK(t, d.jaco("service", "inspect", "web", "--format", "json")).stdout
		for _, tc := range []struct {
			args []string
			word string
		}{
			{[]string{"service", "update", "web", "--mode", "global"}, "invalid_spec"},
			{[]string{"service", "update", "-d", "nosuch", "--replicas", "2"}, "not_found"},
			{[]string{"service", "scale", "-d", "nosuch=2"}, "not_found"},
			{[]string{"service", "inspect", "nosuch"}, "not_found"},
			{[]string{"service", "rollback", "-d", "web"}, "invalid_spec"},
			{[]string{"node", "inspect", "nosuch"}, "not_found"},
		} {
			wantError(t, d.jaco(tc.args...), 1, tc.word)
		}
		if after := wantOK(t, d.jaco("service", "inspect", "web", "--format", "json")).stdout; after != before {
			t.Errorf("refused calls changed the service:\nbefore %s\nafter  %s", before, after)
		}
	})

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
