package raft

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// TestRaftMessageFromAnotherMembersIDIsRefused: a manager's certificate
// speaks for its own raft member only. A message whose From is another
// node's member, or a raft id other than the sender's own, is refused
// permission_denied before raft sees it; the sender's own id, and an id
// neither side is known by yet (a member not learnt of yet), pass.
func TestRaftMessageFromAnotherMembersIDIsRefused(t *testing.T) {
	n, _, _ := serveRaft(t)
	const bob, unknown = 0xb0b, 0xc0c
	n.members.add(&api.RaftMember{RaftId: bob, NodeId: "node-b", Address: "127.0.0.1:7001"})
	svc := NewService(n)
	for _, tc := range []struct {
		name   string
		sender string
		from   uint64
		refuse bool
	}{
		{"own member", "node-b", bob, false},
		{"another node's member", "node-c", bob, true},
		{"an id other than the sender's own", "node-b", unknown, true},
		{"neither known yet", "node-new", unknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx = identity.NewContext(ctx, identity.Identity{Kind: identity.Node, NodeID: tc.sender, Role: "manager"})
			_, err := svc.ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{Messages: [][]byte{staleAppend(t, tc.from, 10)}})
			refused := status.Code(err) == codes.PermissionDenied && reason.Of(err) == reason.PermissionDenied
			if refused != tc.refuse {
				t.Fatalf("message from %x sent with node %s's certificate: err = %v, want refused %v", tc.from, tc.sender, err, tc.refuse)
			}
		})
	}
}
