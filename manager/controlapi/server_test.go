package controlapi

import (
	"context"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

func newServer(t *testing.T, nodes ...*api.Node) *Server {
	t.Helper()
	st := store.New(nil)
	t.Cleanup(st.Close)
	req := &api.InternalRaftRequest{}
	for _, n := range nodes {
		n.Meta = &api.Meta{}
		req.Actions = append(req.Actions, &api.StoreAction{Kind: api.StoreAction_KIND_CREATE, Target: &api.StoreAction_Node{Node: n}})
	}
	if err := st.Apply(1, req); err != nil {
		t.Fatal(err)
	}
	return New(st)
}

func TestGetNodeByIDOrHostname(t *testing.T) {
	s := newServer(t,
		&api.Node{Id: "aaa", Hostname: "m1"},
		// A hostname equal to another node's id must not shadow that node.
		&api.Node{Id: "bbb", Hostname: "aaa"},
	)
	for _, tc := range []struct{ arg, wantID string }{{"aaa", "aaa"}, {"m1", "aaa"}, {"bbb", "bbb"}} {
		resp, err := s.GetNode(context.Background(), &api.GetNodeRequest{Node: tc.arg})
		if err != nil || resp.Node.Id != tc.wantID {
			t.Errorf("GetNode(%q) = %v, %v; want node %s", tc.arg, resp, err, tc.wantID)
		}
	}
	_, err := s.GetNode(context.Background(), &api.GetNodeRequest{Node: "nope"})
	if reason.Of(err) != reason.NotFound {
		t.Fatalf("GetNode(nope): %v, want not_found", err)
	}
}
