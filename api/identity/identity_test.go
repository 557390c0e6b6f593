package identity

import (
	"regexp"
	"strings"
	"testing"
)

// A node id is the name in the node's certificate, so every id must be a
// DNS label; ids name objects in the store, so two must never collide.
func TestNewIDsAreDistinctDNSLabels(t *testing.T) {
	label := regexp.MustCompile(`^[a-z2-7]{26}$`)
	seen := make(map[string]bool)
	for range 1000 {
		for _, newID := range []func() (string, error){NewID, NewNodeID} {
			id, err := newID()
			if err != nil {
				t.Fatal(err)
			}
			if !label.MatchString(id) {
				t.Fatalf("id %q is not 26 lowercase base32 characters", id)
			}
			if seen[id] {
				t.Fatalf("id %q drawn twice", id)
			}
			seen[id] = true
		}
	}
}

// Static formation derives node ids from the join secret through NodeIDOf:
// another encoding would rename the nodes of a formed cluster.
func TestNodeIDOfEncoding(t *testing.T) {
	var zeros, ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	for _, tc := range []struct {
		b    [16]byte
		want string
	}{
		{zeros, strings.Repeat("a", 26)},
		{ones, strings.Repeat("7", 25) + "4"},
	} {
		if got := NodeIDOf(tc.b); got != tc.want {
			t.Errorf("NodeIDOf(%x) = %q, want %q", tc.b, got, tc.want)
		}
	}
}
