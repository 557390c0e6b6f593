package placement

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestMatches(t *testing.T) {
	n := &api.Node{Id: "abc", Hostname: "w1", Role: api.NodeRole_NODE_ROLE_WORKER,
		Labels: map[string]string{"zone": "a", "disk": "ssd"}}
	for _, tc := range []struct {
		constraints []string
		pin         string
		want        bool
	}{
		{nil, "", true},
		{[]string{"node.labels.zone==a"}, "", true},
		{[]string{"node.labels.zone == b"}, "", false},
		{[]string{"node.labels.zone!=b", "node.labels.disk==ssd"}, "", true},
		{[]string{"node.labels.gpu==yes"}, "", false},
		{[]string{"node.labels.gpu!=yes"}, "", true},
		{[]string{"node.hostname==w1"}, "", true},
		{[]string{"node.hostname!=w1"}, "", false},
		{[]string{"node.role==worker"}, "", true},
		{[]string{"node.role==manager"}, "", false},
		{[]string{"node.id==abc"}, "", true},
		{[]string{"node.colour==red"}, "", false}, // unknown attribute: nothing matches
		{[]string{"zone"}, "", false},
		{nil, "w1", true},
		{nil, "abc", true},
		{nil, "w2", false},
	} {
		p := &api.Placement{Constraints: tc.constraints, PinNode: tc.pin}
		if got := Matcher(p)(n); got != tc.want {
			t.Errorf("constraints %q pin %q: match = %v, want %v", tc.constraints, tc.pin, got, tc.want)
		}
	}
}
