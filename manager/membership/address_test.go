package membership

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// asNode2 is jaco-2's manager certificate (admitServer: raft id 2 at a:7000).
var asNode2 = identity.NewContext(context.Background(), identity.Identity{Kind: identity.Node, NodeID: "n2", Role: ca.RoleManager})

// A manager restarted at a new address moves its raft member and its
// Node; asking again changes nothing.
func TestUpdateAddressMovesTheCallersMemberAndNode(t *testing.T) {
	s, r, st := admitServer(t)
	resp, err := s.UpdateAddress(asNode2, &api.UpdateAddressRequest{Address: "moved:7000"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.calls, []string{"update moved:7000"}) {
		t.Fatalf("raft calls %v, want one address update", r.calls)
	}
	if i := slices.IndexFunc(resp.Members, func(m *api.RaftMember) bool { return m.RaftId == 2 }); i < 0 || resp.Members[i].Address != "moved:7000" || resp.Members[i].NodeId != "n2" {
		t.Fatalf("members in the answer %v", resp.Members)
	}
	if n := node(st, "jaco-2"); n.Address != "moved:7000" {
		t.Fatalf("node after the move: %v", n)
	}
	if _, err := s.UpdateAddress(asNode2, &api.UpdateAddressRequest{Address: "moved:7000"}); err != nil || len(r.calls) != 1 {
		t.Fatalf("repeat: %v, raft calls %v; want no second change", err, r.calls)
	}
}

// Only a manager's certificate moves a member, and only its own: nothing
// in the request names whom to move.
func TestUpdateAddressOnlyForTheCallingManager(t *testing.T) {
	s, r, st := admitServer(t)
	for _, id := range []identity.Identity{{Kind: identity.Anonymous}, {Kind: identity.Operator}, {Kind: identity.Local},
		{Kind: identity.Node, NodeID: "n2", Role: ca.RoleWorker}} {
		_, err := s.UpdateAddress(identity.NewContext(context.Background(), id), &api.UpdateAddressRequest{Address: "moved:7000"})
		if reason.Of(err) != reason.PermissionDenied {
			t.Errorf("UpdateAddress as %v: %v, want permission_denied", id, err)
		}
	}
	gone := identity.NewContext(context.Background(), identity.Identity{Kind: identity.Node, NodeID: "gone", Role: ca.RoleManager})
	if _, err := s.UpdateAddress(gone, &api.UpdateAddressRequest{Address: "moved:7000"}); reason.Of(err) != reason.NodeRemoved {
		t.Errorf("UpdateAddress from a node the cluster does not hold: %v, want node_removed", err)
	}
	if len(r.calls) != 0 || node(st, "jaco-2").Address != "a:7000" {
		t.Fatalf("refused moves changed something: raft calls %v, node %v", r.calls, node(st, "jaco-2"))
	}
}

// An address another node or member holds, or one peers cannot dial, is
// refused with its reason, and nothing changes.
func TestUpdateAddressRefusals(t *testing.T) {
	s, r, st := admitServer(t)
	storetest.Create(t, st, &api.Node{Id: "w1", Meta: &api.Meta{}, Hostname: "worker-1", Address: "w:7000", Role: api.NodeRole_NODE_ROLE_WORKER})
	for _, c := range []struct{ addr, reason, says string }{
		{"l:7000", reason.AddressInUse, "raft member 1 (node n1)"},
		{"w:7000", reason.AddressInUse, "node worker-1 (w1)"},
		{"no-port", reason.InvalidSpec, "no-port"},
		{":7000", reason.InvalidSpec, "both given"},
		{"0.0.0.0:7000", reason.InvalidSpec, "wildcard"},
	} {
		_, err := s.UpdateAddress(asNode2, &api.UpdateAddressRequest{Address: c.addr})
		if reason.Of(err) != c.reason || !strings.Contains(reason.Sentence(err), c.says) {
			t.Errorf("move to %q: %v; want %s naming %q", c.addr, err, c.reason, c.says)
		}
	}
	if len(r.calls) != 0 || node(st, "jaco-2").Address != "a:7000" {
		t.Fatalf("refused moves changed something: raft calls %v, node %v", r.calls, node(st, "jaco-2"))
	}
}
