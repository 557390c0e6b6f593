package placement

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestMatches(t *testing.T) {
	n := &api.Node{Id: "abc", Hostname: "w1", Role: api.NodeRole_NODE_ROLE_WORKER,
		Labels:      map[string]string{"zone": "a", "disk": "ssd"},
		Description: &api.NodeDescription{Platform: &api.Platform{Os: "linux", Architecture: "x86_64"}}}
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
		{[]string{"node.platform.os==linux"}, "", true},
		{[]string{"node.platform.os!=linux"}, "", false},
		{[]string{"node.platform.os==windows"}, "", false},
		{[]string{"node.platform.arch==x86_64"}, "", true},
		{[]string{"node.platform.arch==amd64"}, "", true}, // Go's name for the same machine
		{[]string{"node.platform.arch==aarch64"}, "", false},
		{[]string{"node.platform.arch!=arm64"}, "", true},
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

// A node whose agent reported no platform (an older one) fails == and
// passes != on node.platform.*, as for a missing label.
func TestPlatformUnknown(t *testing.T) {
	n := &api.Node{Id: "abc", Hostname: "w1"}
	for c, want := range map[string]bool{"node.platform.os==linux": false, "node.platform.os!=windows": true, "node.platform.arch==x86_64": false} {
		if got := Matcher(&api.Placement{Constraints: []string{c}})(n); got != want {
			t.Errorf("%s on a node without a platform: %v, want %v", c, got, want)
		}
	}
}
