package controlapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Node labels are bounded in count and value size, and their values hold
// no control characters (node ls prints them); a refusal changes nothing.
func TestNodeLabelBounds(t *testing.T) {
	s, st := newServiceServer(t)
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	if _, err := s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "n1", SetLabels: many(limits.MaxNodeLabels - 1)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		word   string
	}{
		{"too many in one request", many(limits.MaxNodeLabels + 1), reason.LimitExceeded},
		{"too many in all", map[string]string{"x1": "v", "x2": "v"}, reason.LimitExceeded},
		{"value too long", map[string]string{"big": strings.Repeat("v", limits.MaxLabelValueBytes+1)}, reason.LimitExceeded},
		{"escape sequence", map[string]string{"zone": "a\x1b[31mred"}, reason.InvalidSpec},
		{"newline", map[string]string{"zone": "a\nb"}, reason.InvalidSpec},
		{"not utf-8", map[string]string{"zone": "\xff"}, reason.InvalidSpec},
		{"key too long", map[string]string{strings.Repeat("k", 64): "v"}, reason.InvalidSpec},
	} {
		_, err := s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "n1", SetLabels: tc.labels})
		if got := reason.Of(err); got != tc.word {
			t.Errorf("%s: reason %q (%v), want %q", tc.name, got, err, tc.word)
		}
	}
	var n *api.Node
	st.View(func(tx store.ReadTx) { n = tx.GetNode("n1") })
	if len(n.Labels) != limits.MaxNodeLabels-1 {
		t.Errorf("node has %d labels after refused updates, want %d", len(n.Labels), limits.MaxNodeLabels-1)
	}
	// Replacing a value at the limit is no new label.
	if _, err := s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "n1", SetLabels: map[string]string{"k0": "w", "zone": "a"}}); err != nil {
		t.Fatalf("the 64th label: %v", err)
	}
}
