package netplane

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/agent"
	"github.com/jaco-project/jaco/agent/isolation"
)

// TestDescribeReportsIsolation: the agent's description carries the
// isolation state the scheduler and `jaco node ls` read.
func TestDescribeReportsIsolation(t *testing.T) {
	// A ruleset that did not load (never loaded here: Load would need
	// CAP_NET_ADMIN; agent/isolation tests a real failed Load).
	d := agent.MachineDescription(nil)
	DescribeIsolation(d, isolation.New("jaco-test"))
	if !d.GetIsolationUnavailable() {
		t.Errorf("description of a node whose ruleset did not load: isolation_unavailable = false")
	}
	if !strings.Contains(d.GetIsolationMessage(), "network isolation unavailable") {
		t.Errorf("isolation_message = %q, want the reason", d.GetIsolationMessage())
	}
	if d.GetHostname() == "" || d.GetResources() == nil {
		t.Errorf("description lost the machine: %v", d)
	}

	// A node without containerd runs only hook bundles, which are never
	// isolated: it is not isolation_unavailable.
	d = agent.MachineDescription(nil)
	DescribeIsolation(d, nil)
	if d.GetIsolationUnavailable() || d.GetIsolationMessage() != "" {
		t.Errorf("node without containerd: %v, want no isolation state", d)
	}
}
