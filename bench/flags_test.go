package main

import (
	"slices"
	"strings"
	"testing"
)

func TestOneDashLongFlags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"-work W -keep -out O", "--work W --keep --out O"},
		{"--work W --keep=false", "--work W --keep=false"},
		{"-rates=1000,8000 -jaco-tcp", "--rates=1000,8000 --jaco-tcp"},
		// A value is never rewritten, even one that looks like a flag.
		{"-out -keep -work -phases", "--out -keep --work -phases"},
		{"--out -keep", "--out -keep"},
		// The command's own flags, not the root's.
		{"updates -work W -rounds 3 -load-before 0.1", "updates --work W --rounds 3 --load-before 0.1"},
		{"nodes -manager 127.0.0.1:1 -memory-gib 4 -role-check 0", "nodes --manager 127.0.0.1:1 --memory-gib 4 --role-check 0"},
		{"conns -count 5 -read-buffer 8192", "conns --count 5 --read-buffer 8192"},
		// Help, shorthands, unknown names, and everything after "--".
		{"-help", "--help"},
		{"updates -h", "updates -h"},
		{"-bogus -Work -5", "--bogus -Work -5"},
		{"-work W -- -keep", "--work W -- -keep"},
	} {
		got := strings.Join(oneDashLongFlags(jacoBenchCmd(), strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestScriptsCommandLines: the command lines scripts/bench-*.sh and
// scripts/lib/largestore-nodes.sh run, with one dash as they write them,
// reach the command they name with every value set.
func TestScriptsCommandLines(t *testing.T) {
	for _, tc := range []struct {
		line string
		cmd  string
		want map[string]string
	}{
		{"-work R -out O -jacod D -jaco J -etcd E -duration 10s -phases failover -kills 5",
			"jaco-bench", map[string]string{"work": "R", "out": "O", "jacod": "D", "jaco": "J", "etcd": "E", "duration": "10s", "phases": "failover", "kills": "5", "rates": "150,1000,8000,15000"}},
		{"-work R -keep -jacod D -jaco J -out O -phases rate -systems jaco -rates 15000 -clients 1000 -duration 60s -fault pause",
			"jaco-bench", map[string]string{"keep": "true", "systems": "jaco", "rates": "15000", "clients": "1000", "duration": "1m0s", "fault": "pause"}},
		{"containers -work R -out O -jacod D -jaco J -ctr C -load-before L -replicas 5 -rounds 5 -floors ctr",
			"containers", map[string]string{"work": "R", "ctr": "C", "load-before": "L", "replicas": "5", "rounds": "5", "floors": "ctr"}},
		{"updates -work R -out O -jacod D -jaco J -load-before L -rounds 3",
			"updates", map[string]string{"work": "R", "out": "O", "jacod": "D", "load-before": "L", "rounds": "3", "replicas": "30"}},
		{"nodes -manager 127.0.0.1:27430 -socket S -count 5000 -state ST",
			"nodes", map[string]string{"manager": "127.0.0.1:27430", "socket": "S", "count": "5000", "state": "ST", "joins": "32"}},
		{"conns -count 5000", "conns", map[string]string{"count": "5000", "streams": "2"}},
		{"conns-client --addr A --count 3 --streams 2 --dir D", "conns-client", map[string]string{"addr": "A", "count": "3", "dir": "D"}},
		{"echo-server --socket S", "echo-server", map[string]string{"socket": "S"}},
	} {
		root := jacoBenchCmd()
		args := oneDashLongFlags(root, strings.Fields(tc.line))
		cmd, rest, err := root.Find(args)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if cmd.Name() != tc.cmd {
			t.Fatalf("%q: runs %s, want %s", tc.line, cmd.Name(), tc.cmd)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if extra := cmd.Flags().Args(); len(extra) > 0 {
			t.Errorf("%q: arguments left over: %q", tc.line, extra)
		}
		for name, want := range tc.want {
			f := cmd.Flags().Lookup(name)
			if f == nil {
				t.Errorf("%q: no flag --%s", tc.line, name)
				continue
			}
			if got := f.Value.String(); got != want {
				t.Errorf("%q: --%s = %q, want %q", tc.line, name, got, want)
			}
		}
	}
}

// TestInternalCommandsHidden: the child processes' commands are not
// offered in the help, the benchmarks are.
func TestInternalCommandsHidden(t *testing.T) {
	var listed []string
	for _, c := range jacoBenchCmd().Commands() {
		if c.IsAvailableCommand() {
			listed = append(listed, c.Name())
		}
	}
	slices.Sort(listed)
	if want := []string{"conns", "containers", "nodes", "updates"}; !slices.Equal(listed, want) {
		t.Errorf("commands in the help: %q, want %q", listed, want)
	}
}
