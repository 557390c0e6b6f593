package client

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/ca/token"
)

func TestServerAddr(t *testing.T) {
	for in, want := range map[string]string{
		"node1":              "node1:7000",
		"node1:7001":         "node1:7001",
		"node1.example.com":  "node1.example.com:7000",
		"198.18.0.1":         "198.18.0.1:7000",
		"198.18.0.1:7001":    "198.18.0.1:7001",
		"::1":                "[::1]:7000",
		"[::1]":              "[::1]:7000",
		"[::1]:7001":         "[::1]:7001",
		"fe80::1%eth0":       "[fe80::1%eth0]:7000",
		"[fe80::1%eth0]:80":  "[fe80::1%eth0]:80",
		"2001:db8::7000":     "[2001:db8::7000]:7000", // bare IPv6: all of it is the address
		"localhost:65535":    "localhost:65535",
		"under_score-host.x": "under_score-host.x:7000",
	} {
		got, err := ServerAddr(in)
		if err != nil || got != want {
			t.Errorf("ServerAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "node1:", ":7000", "node1:http", "node1:0", "node1:65536", "node1:-1", "node1:7000:7001",
		"[::1", "::1]", "[::1]:", "[::1]x", "[node1]", "[198.18.0.1]:7000", "[::1]:99999",
		"https://node1", "node 1", "node1/x", "user@node1", "[]", "[]:7000",
	} {
		if got, err := ServerAddr(in); err == nil {
			t.Errorf("ServerAddr(%q) = %q, want an error", in, got)
		}
	}
}

// A client given a host without a port dials the daemon's default port.
func TestNewDialsDefaultPort(t *testing.T) {
	tok, err := token.New(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{"node1": "dns:///node1:7000", "::1": "dns:///[::1]:7000", "[::1]:7001": "dns:///[::1]:7001"} {
		c, err := New(WithServer(addr, tok.String()))
		if err != nil {
			t.Fatalf("New(WithServer(%q)): %v", addr, err)
		}
		if c.Target != want {
			t.Errorf("WithServer(%q) dials %q, want %q", addr, c.Target, want)
		}
		c.Close()
	}
	if _, err := New(WithServer("node1:x", tok.String())); err == nil {
		t.Error("WithServer(node1:x): no error")
	}
}
