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
