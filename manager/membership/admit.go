package membership

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/carotation"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Admit is the leader side of a formation join (docs/adr/0013): a manager
// verified the joiner's join secret and asks on its behalf. Holding the
// secret makes the joiner a manager, so there is no token to redeem; and
// since the same replica comes back under the same name, the name decides:
//
//   - a member of that name asking with its node id (it has raft state)
//     keeps its raft id; a changed address is rewritten in raft and in the
//     store instead of adding a second member;
//   - a new name is added as a nonvoter, like a token join;
//   - a name held by a member the joiner is not (it lost its data dir) is
//     taken over: the old member is removed (voter-safe), then the joiner
//     is added. Only a secret holder can ask this.
func (s *Server) Admit(ctx context.Context, req *api.AdmitRequest) (*api.JoinResponse, error) {
	if id, ok := identity.FromContext(ctx); !ok || id.Kind != identity.Node || id.Role != ca.RoleManager {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "formation admissions come from managers that verified the join secret")
	}
	if err := validateNameAndAddress(req.Hostname, req.Address); err != nil {
		return nil, err
	}
	cluster, err := s.cluster()
	if err != nil {
		return nil, err
	}
	var existing *api.Node
	s.store.View(func(tx store.ReadTx) { existing = tx.FindNodeByHostname(req.Hostname) })
	if req.NodeId != "" {
		if existing == nil || existing.Id != req.NodeId {
			return nil, reason.Error(codes.PermissionDenied, reason.NodeRemoved,
				"node %s (%s) is not in the cluster: it was removed; wipe its data dir to join again", req.NodeId, req.Hostname)
		}
		return s.readdress(ctx, cluster, existing, req.Address)
	}
	if len(req.CsrPem) == 0 {
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "no certificate request")
	}
	// Signing checks the request, before anything changes: a bad one
	// must not cost the name's holder its membership.
	j, err := s.signJoiner(cluster, req.Hostname, req.Address, req.CsrPem, api.NodeRole_NODE_ROLE_MANAGER)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		s.log.Warn("a formation joiner without state takes over its name: removing the old member",
			"hostname", existing.Hostname, "node_id", existing.Id, "address", existing.Address)
		if err := s.RemoveNode(ctx, existing); err != nil {
			return nil, err
		}
	}
	return s.admit(ctx, cluster, j, s.store.Update, "node joined with the join secret")
}

// readdress makes node's raft member and Node object carry address.
func (s *Server) readdress(ctx context.Context, cluster *api.Cluster, node *api.Node, address string) (*api.JoinResponse, error) {
	if node.Role != api.NodeRole_NODE_ROLE_MANAGER || node.RaftId == 0 {
		return nil, reason.Error(codes.FailedPrecondition, reason.NotAManager, "%s is not a manager", node.Hostname)
	}
	for _, m := range s.raft.Members() {
		if m.RaftId == node.RaftId && m.Address != address {
			upd := &api.RaftMember{RaftId: m.RaftId, NodeId: m.NodeId, Address: address}
			if err := s.raft.UpdateMember(ctx, upd); err != nil {
				return nil, apierror.ToStatus(fmt.Errorf("rewrite the raft address of %s: %w", node.Hostname, err))
			}
			s.log.Info("raft member address rewritten", "hostname", node.Hostname, "from", m.Address, "to", address)
		}
	}
	if node.Address != address {
		err := s.store.Update(ctx, func(tx *store.Tx) error {
			cur := tx.GetNode(node.Id)
			if cur == nil {
				return fmt.Errorf("node %s: %w", node.Id, store.ErrNotFound)
			}
			cur.Address = address
			cur.Meta.UpdatedAt = timestamppb.New(s.now())
			return tx.Update(cur)
		})
		if err != nil {
			return nil, apierror.ToStatus(fmt.Errorf("record the address of %s: %w", node.Hostname, err))
		}
	}
	return &api.JoinResponse{ClusterId: cluster.Id, NodeId: node.Id, Role: node.Role, CaCertPem: carotation.Bundle(cluster),
		RaftId: node.RaftId, Members: s.raft.Members()}, nil
}
