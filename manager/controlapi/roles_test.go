package controlapi

import (
	"context"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func TestUpdateNodeRole(t *testing.T) {
	ready := func() *api.NodeStatus { return &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY} }
	st := storetest.New(t)
	storetest.Create(t, st,
		&api.Node{Id: "m1", Hostname: "m1", Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: 1, Status: ready()},
		&api.Node{Id: "w1", Hostname: "w1", Role: api.NodeRole_NODE_ROLE_WORKER, Status: ready()},
	)
	s := New(st)
	ctx := context.Background()
	role := func(r api.NodeRole) *api.NodeRole { return &r }

	if _, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "m1", Role: role(api.NodeRole_NODE_ROLE_WORKER)}); reason.Of(err) != reason.InvalidSpec {
		t.Errorf("demote the last manager: %v, want invalid_spec", err)
	}
	resp, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "w1", Role: role(api.NodeRole_NODE_ROLE_MANAGER)})
	if err != nil || resp.Node.DesiredRole != api.NodeRole_NODE_ROLE_MANAGER || resp.Node.Role != api.NodeRole_NODE_ROLE_WORKER {
		t.Fatalf("promote w1: %v %v; want desired role manager, role still worker", resp, err)
	}
	if _, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "m1", Role: role(api.NodeRole_NODE_ROLE_WORKER)}); reason.Of(err) != reason.InvalidSpec {
		t.Errorf("demote m1 while w1 is not a manager yet: %v, want invalid_spec", err)
	}
	if _, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "w1", Role: role(api.NodeRole(9))}); reason.Of(err) != reason.InvalidSpec {
		t.Errorf("unknown role: %v, want invalid_spec", err)
	}
}
