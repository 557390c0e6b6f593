package membership

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/carotation"
	"github.com/jaco-project/jaco/manager/state/store"
)

// RenewCertificate signs a fresh certificate for the calling node, named
// by the certificate it called with (forwarded by a manager or not), with
// the role the cluster holds for it now (Node.role, which the role
// manager changes only once raft membership matches it). A manager's
// answer carries its raft id, and every answer the managers, so that a
// promoted worker can start its raft member and a worker finds them.
//
// An empty csr_pem only asks: the answer carries the role (and raft id and
// members) but no certificate. Nodes poll that way, cheaply, to learn of a
// promotion or demotion before their renewal is due.
func (s *Server) RenewCertificate(ctx context.Context, req *api.RenewCertificateRequest) (*api.RenewCertificateResponse, error) {
	id, ok := identity.FromContext(ctx)
	if !ok || id.Kind != identity.Node || id.NodeID == "" {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "only a node renews its certificate, with its certificate")
	}
	cluster, err := s.cluster()
	if err != nil {
		return nil, err
	}
	var node *api.Node
	s.store.View(func(tx store.ReadTx) { node = tx.GetNode(id.NodeID) })
	if node == nil {
		return nil, reason.Error(codes.PermissionDenied, reason.NodeRemoved, "node %s is not in the cluster: it was removed", id.NodeID)
	}
	// Every node learns the managers: a manager to reach raft, a worker
	// to find the dispatcher again.
	resp := &api.RenewCertificateResponse{Role: node.Role, CaCertPem: carotation.Bundle(cluster), Members: s.raft.Members()}
	if err := s.recordCAProgress(ctx, cluster, node, req); err != nil {
		return nil, err
	}
	role := certRole(node.Role)
	if node.Role == api.NodeRole_NODE_ROLE_MANAGER {
		resp.RaftId = node.RaftId
	}
	if len(req.CsrPem) == 0 {
		return resp, nil
	}
	resp.CertPem, err = s.sign(cluster, req.CsrPem, node.Id, role)
	if err != nil {
		return nil, err
	}
	if id.Role != role {
		s.log.Info("certificate reissued for a role change", "node_id", node.Id, "hostname", node.Hostname, "from", id.Role, "to", role)
	} else {
		s.log.Debug("certificate renewed", "node_id", node.Id, "hostname", node.Hostname, "role", role)
	}
	return resp, nil
}

// caCheckInterval is how often polls that report nothing new check
// whether a rotation can move on — which a removed node it waited for
// allows. Each check reads every Node: with thousands of nodes polling,
// checking at every poll would cost more than the rotation.
const caCheckInterval = time.Second

// caCheckDue reports whether a poll that reported nothing new checks the
// rotation now, and if so takes the turn.
func (s *Server) caCheckDue() bool {
	now, last := s.now().UnixNano(), s.caCheckedAt.Load()
	return now-last >= int64(caCheckInterval) && s.caCheckedAt.CompareAndSwap(last, now)
}

// caProgressAttempts bounds the runs of a CA progress write that other
// writes to the same objects got in before.
const caProgressAttempts = 5

// recordCAProgress records what the node reported of its CA trust and
// certificate, when that changed, and moves a CA rotation on when every
// node has done its phase (docs/adr/0041). Nodes poll every few seconds,
// so the rotation moves on within one poll of the last node's report, or
// of the removal of a node it waited for.
func (s *Server) recordCAProgress(ctx context.Context, cluster *api.Cluster, node *api.Node, req *api.RenewCertificateRequest) error {
	// node is this call's own copy (store reads clone): marking it only
	// tells whether anything changed.
	changed := carotation.Record(node, req.TrustFingerprint, req.CertCaFingerprint)
	if !changed && (cluster.CaRotation == nil || !s.caCheckDue()) {
		return nil
	}
	// Retried on a conflict: the dispatcher writes Node status too.
	var moved bool
	var now *api.CARotation
	err := s.store.UpdateRetrying(ctx, caProgressAttempts, func(tx *store.Tx) (err error) {
		moved = false
		if n := tx.GetNode(node.Id); n != nil && carotation.Record(n, req.TrustFingerprint, req.CertCaFingerprint) {
			if err := tx.Update(n); err != nil {
				return err
			}
		}
		c := tx.Cluster()
		if c == nil {
			return nil
		}
		if moved, err = carotation.Advance(c, tx.ListNodes()); err != nil || !moved {
			return err
		}
		now = c.CaRotation
		return tx.Update(c)
	})
	if err != nil {
		return apierror.ToStatus(fmt.Errorf("record the node's CA progress: %w", err))
	}
	if moved {
		switch now.GetPhase() {
		case api.CARotation_PHASE_REISSUE:
			s.log.Info("CA rotation: every node trusts the new CA; it signs from now on and certificates are reissued")
		case api.CARotation_PHASE_DROP:
			s.log.Info("CA rotation: every node's certificate is issued by the new CA; nodes now drop the old CA")
		default:
			s.log.Info("CA rotation done: no node trusts the old CA any more")
		}
	}
	return nil
}
