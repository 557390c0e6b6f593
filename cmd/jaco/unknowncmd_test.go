package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownCommandIsAUsageError: a word that names no subcommand of a
// group exits 2 with a usage error instead of printing help and exiting 0
// (a script's typo must not pass as success); a group given no word still
// prints its help.
func TestUnknownCommandIsAUsageError(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `error: usage: unknown command "frob" for "jaco"`},
		{[]string{"service", "frobnicate"}, `error: usage: unknown command "frobnicate" for "jaco service"`},
		{[]string{"service", "lss"}, `error: usage: unknown command "lss" for "jaco service"`},
		{[]string{"node", "frob"}, `error: usage: unknown command "frob" for "jaco node"`},
		{[]string{"cluster", "frob", "x"}, `error: usage: unknown command "frob" for "jaco cluster"`},
		{[]string{"image", "frob"}, `error: usage: unknown command "frob" for "jaco image"`},
	} {
		code, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("jaco %v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, stderr := runCLI(t, "service", "rmm"); !strings.Contains(stderr, "did you mean rm?") {
		t.Errorf("service rmm: stderr %q, want a suggestion of rm", stderr)
	}
	for _, args := range [][]string{{}, {"service"}, {"node"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != 0 || !strings.Contains(stdout.String(), "Usage:") {
			t.Errorf("jaco %v: exit %d, stdout %q; want 0 and the help", args, code, stdout.String())
		}
	}
}
