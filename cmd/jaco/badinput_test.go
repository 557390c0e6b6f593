package main

import (
	"strings"
	"testing"
)

// badInput is a row of issue 12's CLI bad-input table: a call jaco must
// refuse, its exit status (2: usage, 1: refused) and what stderr must hold.
type badInput struct {
	args []string
	code int
	want string
}

// TestBadInput runs each row without a daemon: runCLI points at an empty
// data dir, so a row refused with 2 was refused before anything was
// dialled (a call that got as far as dialling fails unavailable, 1).
func TestBadInput(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	for _, c := range []badInput{
		// --server: HOST alone means port 7000; anything else that is
		// not HOST:PORT or an IPv6 literal is refused.
		{[]string{"--server", "node1:", "service", "ls"}, 2, `error: usage: --server: server address "node1:"`},
		{[]string{"--server", "node1:http", "service", "ls"}, 2, `port "http" is not a number`},
		{[]string{"--server", "node1:70000", "service", "ls"}, 2, `port "70000" is not a number`},
		{[]string{"--server", "[::1", "service", "ls"}, 2, `error: usage: --server: server address "[::1"`},
		{[]string{"--server", "https://node1", "service", "ls"}, 2, `is a URL`},
		{[]string{"--server", "node 1", "service", "ls"}, 2, `neither an IP address nor a host name`},
	} {
		code, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("jaco %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.want)
		}
	}
}
