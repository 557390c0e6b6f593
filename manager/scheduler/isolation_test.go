package scheduler

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

// TestSkipsNodesWithoutIsolation: a node reporting isolation_unavailable
// takes no replica of either runtime, and a replica no other node can
// take says why it is pending.
func TestSkipsNodesWithoutIsolation(t *testing.T) {
	unisolated := func(id string) *api.Node {
		n := readyNode(id)
		n.Description.IsolationUnavailable = true
		n.Description.IsolationMessage = "network isolation unavailable: operation not permitted"
		return n
	}
	hooks := imageSpec("hk")
	hooks.Image, hooks.Bundle = "", &api.HookBundle{}
	for _, spec := range []*api.ServiceSpec{imageSpec("svc"), hooks} {
		t.Run(spec.GetName(), func(t *testing.T) {
			task := pendingTasks(spec, 1)[0]
			got := decideOnce(t, testIndex(unisolated("bad"), readyNode("good"), task))
			if got.node[task.Id] != "good" {
				t.Fatalf("placed %v, want %s on good", got, task.Id)
			}
			got = decideOnce(t, testIndex(unisolated("bad1"), unisolated("bad2"), task))
			want := "no_suitable_node: no suitable node (2 nodes without network isolation)"
			if got.pending[task.Id] != want {
				t.Fatalf("only unisolated nodes: %v, want pending %q", got, want)
			}
		})
	}
}
