package membership

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/carotation"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/state/store"
)

// errGoneMeanwhile: the node was removed between the checks and the
// transaction that reissues its certificate.
var errGoneMeanwhile = errors.New("node removed meanwhile")

// Rejoin gives a worker whose certificate expired a fresh one for the same
// node id (docs/adr/0039-rejoin-expired-certificate.md), so the tasks the
// store assigns it stay its own and its agent re-adopts the replicas it
// still runs. It admits the caller only when the expired certificate is
// the cluster CA's, the request is signed with that certificate's key,
// the node is still in the cluster as a worker, and the token is a usable
// worker token, which it consumes in the transaction that touches the
// node, as a join does (docs/adr/0017). A refused rejoin changes nothing;
// an accepted one changes only the token: the Node keeps its name, address
// and role.
func (s *Server) Rejoin(ctx context.Context, req *api.RejoinRequest) (*api.JoinResponse, error) {
	if len(req.CsrPem) == 0 || len(req.CertPem) == 0 || len(req.Proof) == 0 {
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "a rejoin needs a certificate request, the expired certificate and the proof")
	}
	cluster, err := s.cluster()
	if err != nil {
		return nil, err
	}
	// During a CA rotation a certificate of either CA is the cluster's
	// (docs/adr/0041).
	id, err := ca.VerifyRejoin(carotation.Bundle(cluster), req.CertPem, req.CsrPem, req.Proof)
	if err != nil {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "%v", err)
	}
	if id.ClusterID != cluster.Id {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "the certificate is of cluster %s, not this one", id.ClusterID)
	}
	var node *api.Node
	s.store.View(func(tx store.ReadTx) { node = tx.GetNode(id.NodeID) })
	if node == nil {
		return nil, removedError(id.NodeID)
	}
	if node.Role != api.NodeRole_NODE_ROLE_WORKER {
		return nil, reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"node %s (%s) is a manager: only a worker rejoins; a manager whose certificate expired is removed and joins afresh (docs/operator-guide.md)", node.Hostname, node.Id)
	}
	jt, err := jointoken.Find(s.store, req.Token, s.now())
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	if jt.Role != api.NodeRole_NODE_ROLE_WORKER {
		return nil, reason.Error(codes.PermissionDenied, reason.TokenInvalid, "a rejoin takes a worker join token, not a manager one")
	}
	certPEM, err := s.sign(cluster, req.CsrPem, node.Id, ca.RoleWorker)
	if err != nil {
		return nil, err
	}
	_, err = jointoken.Redeem(ctx, s.store, jt.Id, s.now(), func(tx *store.Tx) error {
		if tx.GetNode(node.Id) == nil {
			return errGoneMeanwhile
		}
		return nil
	})
	switch {
	case errors.Is(err, errGoneMeanwhile):
		return nil, removedError(node.Id)
	case err != nil:
		return nil, apierror.ToStatus(fmt.Errorf("rejoin node %s: %w", node.Hostname, err))
	}
	s.log.Info("node rejoined with a fresh certificate", "hostname", node.Hostname, "node_id", node.Id)
	return &api.JoinResponse{ClusterId: cluster.Id, NodeId: node.Id, Role: api.NodeRole_NODE_ROLE_WORKER,
		CaCertPem: carotation.Bundle(cluster), CertPem: certPEM, Members: s.raft.Members()}, nil
}

// removedError refuses a node the cluster no longer holds: its id stays
// refused for good, and only a fresh join (a new id) brings the machine
// back.
func removedError(nodeID string) error {
	return reason.Error(codes.PermissionDenied, reason.NodeRemoved,
		"node %s was removed from the cluster and cannot rejoin: wipe its data dir and join it afresh with 'jaco node join'", nodeID)
}
