package controlapi

import (
	"context"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// A label change raced by the dispatcher's status write on the same node
// (the heartbeat bumps the node's version between read and commit) still
// lands, and the status write is kept.
func TestUpdateNodeSurvivesConcurrentStatusWrite(t *testing.T) {
	st, p := storetest.NewWithProposer(t)
	storetest.Create(t, st, &api.Node{Id: "n1", Hostname: "w1", Meta: &api.Meta{}})
	races := 2
	p.SetHook(func(commit func([]*api.StoreAction) error) error {
		if races == 0 {
			return nil
		}
		races--
		var n *api.Node
		st.View(func(tx store.ReadTx) { n = tx.GetNode("n1") })
		n.Status = &api.NodeStatus{Message: "heartbeat"}
		return commit([]*api.StoreAction{{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Node{Node: n}}})
	})
	s := New(st)
	resp, err := s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "w1", SetLabels: map[string]string{"zone": "blue"}})
	if err != nil {
		t.Fatalf("UpdateNode behind two status writes: %v", err)
	}
	if resp.Node.Labels["zone"] != "blue" || resp.Node.GetStatus().GetMessage() != "heartbeat" {
		t.Fatalf("node after update = %v; want label zone=blue and the heartbeat status", resp.Node)
	}
	if races != 0 {
		t.Fatalf("the hook raced %d times fewer than planned", races)
	}
}
