package placement

import (
	"errors"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{"node.labels.zone==a", true},
		{"node.labels.zone != a", true},
		{"node.hostname==h1", true},
		{"node.hostname!=h1", true},
		{"node.role==manager", true},
		{"node.role!=worker", true},
		{"node.id==abc", true},
		{"node.role==boss", false},
		{"node.labels.==a", false},
		{"node.labels.zone=a", false},
		{"node.labels.zone==", false},
		{"node.labels.zone==a==b", false},
		{"node.ip==1.2.3.4", false},
		{"zone==a", false},
		{"", false},
	} {
		err := Validate(&api.Placement{Constraints: []string{tc.expr}})
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", tc.expr, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q) = %v, does not wrap ErrInvalid", tc.expr, err)
		}
	}
}

func TestConstraintMatches(t *testing.T) {
	n := &api.Node{Id: "n1", Hostname: "host-n1", Role: api.NodeRole_NODE_ROLE_MANAGER, Labels: map[string]string{"zone": "a"}}
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{"node.labels.zone==a", true},
		{"node.labels.zone==b", false},
		{"node.labels.zone!=b", true},
		{"node.labels.zone!=a", false},
		// A node without the label fails == and passes !=.
		{"node.labels.rack==r1", false},
		{"node.labels.rack!=r1", true},
		{"node.hostname==host-n1", true},
		{"node.hostname!=host-n1", false},
		{"node.role==manager", true},
		{"node.role==worker", false},
		{"node.id==n1", true},
		{"node.id!=n1", false},
	} {
		c, err := parseConstraint(tc.expr)
		if err != nil {
			t.Fatalf("parse %q: %v", tc.expr, err)
		}
		if got := c.Matches(n); got != tc.want {
			t.Errorf("%q on node n1 (zone=a, manager) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestValidatePlacementSpread(t *testing.T) {
	if err := Validate(&api.Placement{Spread: []string{"node.labels.zone", "spread=node.labels.rack"}}); err != nil {
		t.Errorf("valid spread refused: %v", err)
	}
	if err := Validate(&api.Placement{Spread: []string{"zone"}}); err == nil {
		t.Error("spread over \"zone\" accepted")
	}
	if err := Validate(&api.Placement{Constraints: []string{"node.labels.zone"}}); err == nil {
		t.Error("constraint without operator accepted")
	}
}
