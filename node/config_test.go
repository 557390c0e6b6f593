package node

import (
	"errors"
	"strings"
	"testing"
)

// jacod --node-name takes what a join would take and nothing else: a name
// the leader refuses must stop the daemon at start, not at its first join.
func TestNodeNameIsAHostName(t *testing.T) {
	for _, name := range []string{"w1", "jaco-0", "node.example.com"} {
		c := Config{DataDir: t.TempDir(), NodeName: name}
		if err := c.setDefaults(); err != nil {
			t.Errorf("--node-name %q: %v", name, err)
		}
	}
	for what, name := range map[string]string{
		"newline":         "w1\nw2",
		"escape sequence": "w\x1b[31m",
		"emoji":           "w😀",
		"1 MiB":           strings.Repeat("a", 1<<20),
		"underscore":      "w_1",
	} {
		c := Config{DataDir: t.TempDir(), NodeName: name}
		err := c.setDefaults()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "--node-name") {
			t.Errorf("%s: %v, want ErrInvalidConfig naming --node-name", what, err)
		}
	}
}

// jacod --dashboard-addr serves plain HTTP, so on loopback only: any other
// address stops the daemon at start, naming the flag.
func TestDashboardAddrIsLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:8080", "localhost:8080"} {
		c := Config{DataDir: t.TempDir(), NodeName: "m1", DashboardAddr: addr}
		if err := c.setDefaults(); err != nil {
			t.Errorf("--dashboard-addr %q: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:8080", "127.0.0.1"} {
		c := Config{DataDir: t.TempDir(), NodeName: "m1", DashboardAddr: addr}
		err := c.setDefaults()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "--dashboard-addr") {
			t.Errorf("--dashboard-addr %q: %v, want ErrInvalidConfig naming --dashboard-addr", addr, err)
		}
	}
}
