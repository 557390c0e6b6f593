package voterset

import (
	"errors"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestCheckDemotion(t *testing.T) {
	down := func(n *api.Node) *api.Node {
		n.Status = &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_DOWN}
		return n
	}
	for _, tc := range []struct {
		name   string
		nodes  []*api.Node
		target string
		want   error
	}{
		{"last manager", []*api.Node{manager("a", 1), worker("w")}, "a", ErrDemoteLastManager},
		{"the other is being demoted", []*api.Node{manager("a", 1), desire(manager("b", 2), api.NodeRole_NODE_ROLE_WORKER)}, "a", ErrDemoteLastManager},
		{"a worker headed for manager does not count yet", []*api.Node{manager("a", 1), desire(worker("w"), api.NodeRole_NODE_ROLE_MANAGER)}, "a", ErrDemoteLastManager},
		{"two of three, both up", []*api.Node{manager("a", 1), manager("b", 2), manager("c", 3)}, "a", nil},
		{"two stay, one down: 1 voter, quorum 1", []*api.Node{manager("a", 1), down(manager("b", 2)), manager("c", 3)}, "a", nil},
		{"three stay, two down", []*api.Node{manager("a", 1), down(manager("b", 2)), down(manager("c", 3)), manager("d", 4)}, "a", ErrDemoteCostsQuorum},
		{"five: four stay, one down", []*api.Node{manager("a", 1), down(manager("b", 2)), manager("c", 3), manager("d", 4), manager("e", 5)}, "a", nil},
		{"a worker is no demotion", []*api.Node{manager("a", 1), worker("w")}, "w", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var target *api.Node
			for _, n := range tc.nodes {
				if n.Id == tc.target {
					target = n
				}
			}
			if err := CheckDemotion(tc.nodes, target); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("CheckDemotion = %v, want %v", err, tc.want)
			}
		})
	}
}

func manager(id string, raftID uint64) *api.Node {
	return &api.Node{Id: id, Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: raftID,
		Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}}
}

func worker(id string) *api.Node {
	return &api.Node{Id: id, Role: api.NodeRole_NODE_ROLE_WORKER,
		Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}}
}

func desire(n *api.Node, role api.NodeRole) *api.Node { n.DesiredRole = role; return n }
