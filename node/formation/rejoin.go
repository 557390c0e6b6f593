package formation

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// rejoin brings back a worker whose certificate expired while it was off
// (docs/adr/0039-rejoin-expired-certificate.md): a fresh key, a request
// signed by the expired certificate's key, a worker token, and the leader
// reissues the certificate for the same node id. The data dir stays: the
// agent then starts on its database and re-adopts the replicas that kept
// running, as after a plain restart. The caller holds LockInit.
func (f *Former) rejoin(ctx context.Context, req *api.JoinClusterRequest) (*api.JoinClusterResponse, error) {
	if id, ok := identity.FromContext(ctx); !ok || id.Kind != identity.Local {
		// The node's old key signs for whoever asks: only its operator.
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "a rejoin is asked on the node's local socket only")
	}
	if !f.initialized() {
		return nil, reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"--rejoin brings back a node that was in a cluster, and this data dir holds none: join without --rejoin")
	}
	if f.d.Manager() != nil || !IsWorker(f.cfg.Dir) {
		return nil, reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"--rejoin is for a worker; this node is a manager, which renews its certificate while it runs")
	}
	tok, err := token.Parse(req.Token)
	if err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.TokenInvalid, "%v", err)
	}
	caPEM, oldCertPEM, oldKeyPEM, err := f.keys.LoadNodeFiles()
	if err != nil {
		return nil, internalError(err)
	}
	if err := bundleNamed(caPEM, tok.CAFingerprint); err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.TokenInvalid, "the token names another cluster's CA than this node's: %v", err)
	}
	old, err := ca.IdentityFromPEM(oldCertPEM)
	if err != nil {
		return nil, internalError(err)
	}
	keyPEM, csrPEM, err := ca.NewNodeKey(old.NodeID)
	if err != nil {
		return nil, internalError(err)
	}
	proof, err := ca.RejoinProof(oldKeyPEM, csrPEM)
	if err != nil {
		return nil, internalError(err)
	}
	resp, err := callPeer(ctx, req.Peer, tok.CAFingerprint, "rejoin", func(ctx context.Context, c api.MembershipServiceClient) (*api.JoinResponse, error) {
		return c.Rejoin(ctx, &api.RejoinRequest{Token: req.Token, CsrPem: csrPEM, CertPem: oldCertPEM, Proof: proof})
	})
	if err != nil {
		return nil, err
	}
	if resp.NodeId != old.NodeID || resp.Role != api.NodeRole_NODE_ROLE_WORKER {
		return nil, internalError(fmt.Errorf("rejoin answered node %s as %v, want %s as a worker", resp.NodeId, resp.Role, old.NodeID))
	}
	if err := f.installRejoin(resp, keyPEM); err != nil {
		return nil, internalError(err)
	}
	f.log.Info("rejoined the cluster with a fresh certificate", "cluster_id", resp.ClusterId, "node_id", resp.NodeId, "via", req.Peer)
	return &api.JoinClusterResponse{ClusterId: resp.ClusterId, NodeId: resp.NodeId}, nil
}

// installRejoin saves the reissued certificate and starts the agent, which
// re-adopts the replicas its database holds. Connections opened with the
// expired certificate are dropped: they could only fail.
func (f *Former) installRejoin(resp *api.JoinResponse, keyPEM []byte) error {
	if err := f.saveJoinFiles(resp, keyPEM); err != nil {
		return err
	}
	if err := f.parts.ReloadTLS(); err != nil {
		return err
	}
	f.parts.CloseManagerConns()
	return f.parts.StartAgent()
}
