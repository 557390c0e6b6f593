package node

import (
	"errors"
	"os"
	"path/filepath"
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

func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckFormationRefusesBadFlags(t *testing.T) {
	secret := writeSecret(t, "0123456789abcdef0123456789abcdef\n")
	short := writeSecret(t, "short")
	for name, c := range map[string]Config{
		"bootstrap without secret":   {Bootstrap: true, JoinAddrs: []string{"svc:7000"}, NodeName: "jaco-0"},
		"bootstrap without join":     {Bootstrap: true, JoinSecretFile: secret, NodeName: "jaco-0"},
		"bootstrap without ordinal":  {Bootstrap: true, JoinAddrs: []string{"svc:7000"}, JoinSecretFile: secret, NodeName: "jaco"},
		"bad join addr":              {Bootstrap: true, JoinAddrs: []string{"svc"}, JoinSecretFile: secret, NodeName: "jaco-1"},
		"join addr alone":            {JoinAddrs: []string{"svc:7000"}, NodeName: "jaco-1"},
		"short secret":               {Bootstrap: true, JoinAddrs: []string{"svc:7000"}, JoinSecretFile: short, NodeName: "jaco-1"},
		"both modes":                 {Bootstrap: true, InitialCluster: "jaco-1=h:7000", JoinAddrs: []string{"svc:7000"}, JoinSecretFile: secret, NodeName: "jaco-1"},
		"static without secret":      {InitialCluster: "a=h:7000", NodeName: "a"},
		"static without this node":   {InitialCluster: "a=h:7000", JoinSecretFile: secret, NodeName: "b"},
		"static bad list":            {InitialCluster: "a=h", JoinSecretFile: secret, NodeName: "a"},
		"negative formation delay":   {InitialCluster: "a=h:7000", JoinSecretFile: secret, NodeName: "a", FormationDelay: -1},
		"secret file that is absent": {Bootstrap: true, JoinAddrs: []string{"svc:7000"}, JoinSecretFile: secret + ".no", NodeName: "jaco-1"},
	} {
		c.DataDir = t.TempDir()
		if err := c.setDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	ok := Config{DataDir: t.TempDir(), Bootstrap: true, JoinAddrs: []string{"svc:7000", "10.0.0.2:7000"}, JoinSecretFile: secret, NodeName: "jaco-2"}
	if err := ok.setDefaults(); err != nil || ok.formation.Ordinal != 2 || ok.formation.Secret == nil {
		t.Fatalf("good ordinal flags: %v (ordinal %d)", err, ok.formation.Ordinal)
	}
}
