package formation

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager"
	"github.com/jaco-project/jaco/node/roles"
)

// joinTimeout bounds the whole join, including the leader adding this node
// to raft, which needs a quorum.
const joinTimeout = time.Minute

// Join makes this uninitialized daemon a member of the cluster that
// req.Peer belongs to (ClusterService.Join, docs/design.md §4 "Token
// join"), or with req.Rejoin brings back a worker whose certificate
// expired. The key never leaves this node; the peer is trusted only if it
// proves the CA the token names.
func (f *Former) Join(ctx context.Context, req *api.JoinClusterRequest) (*api.JoinClusterResponse, error) {
	unlock, err := f.d.LockInit()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.Rejoin {
		return f.rejoin(ctx, req)
	}
	if err := f.expiry.CertExpiredRefusal(); err != nil {
		return nil, err // the one join this node needs keeps its data dir: it says which
	}
	if f.initialized() {
		return nil, reason.Error(codes.FailedPrecondition, reason.AlreadyInitialized, "this node is already part of a cluster")
	}
	tok, err := token.Parse(req.Token)
	if err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.TokenInvalid, "%v", err)
	}
	keyPEM, csrPEM, err := ca.NewNodeKey("joining-node")
	if err != nil {
		return nil, internalError(err)
	}
	resp, err := callPeer(ctx, req.Peer, tok.CAFingerprint, "join", func(ctx context.Context, c api.MembershipServiceClient) (*api.JoinResponse, error) {
		return c.Join(ctx, &api.JoinRequest{Token: req.Token, CsrPem: csrPEM, Hostname: f.cfg.NodeName, Address: f.d.AdvertiseAddr()})
	})
	if err != nil {
		return nil, err
	}
	if err := f.installJoin(resp, keyPEM); err != nil {
		return nil, internalError(err)
	}
	f.log.Info("joined cluster", "cluster_id", resp.ClusterId, "node_id", resp.NodeId, "role", enumword.Of(resp.Role), "via", req.Peer)
	return &api.JoinClusterResponse{ClusterId: resp.ClusterId, NodeId: resp.NodeId}, nil
}

// installJoin saves what the leader's admission gave this node, with its
// private key, and starts what runs with it: a manager's raft member
// (an empty one, which the leader then ships the log), the TLS config of
// its certificate, the agent. The caller holds LockInit.
func (f *Former) installJoin(resp *api.JoinResponse, keyPEM []byte) error {
	if err := f.saveJoinFiles(resp, keyPEM); err != nil {
		return err
	}
	if resp.Role == api.NodeRole_NODE_ROLE_MANAGER {
		if err := f.WriteJoinedState(resp.ClusterId, resp.NodeId, resp.RaftId, resp.Members); err != nil {
			return err
		}
		if err := f.parts.StartManager(); err != nil {
			return err
		}
	} else {
		f.parts.WorkerReady()
	}
	if err := f.parts.ReloadTLS(); err != nil {
		return err
	}
	return f.parts.StartAgent()
}

// WriteJoinedState writes a new data key and an empty raft member with
// raftID that knows members, for a manager the leader already added to
// raft: by a join, or by a promotion (node/roles asks). The caller holds
// LockInit.
func (f *Former) WriteJoinedState(clusterID, nodeID string, raftID uint64, members []*api.RaftMember) error {
	sealer, err := f.keys.NewDataKey()
	if err != nil {
		return err
	}
	self := &api.RaftMember{RaftId: raftID, NodeId: nodeID, Address: f.d.AdvertiseAddr()}
	return manager.BootstrapJoin(f.cfg.Dir.Raft(), sealer, clusterID, self, members)
}

// bundleNamed checks that the CA bundle bundlePEM holds the CA whose
// fingerprint a token names (fp). During a CA rotation a bundle holds two
// CAs, in either order, and a token names one of them (docs/adr/0041).
func bundleNamed(bundlePEM []byte, fp string) error {
	cas, err := ca.ParseBundle(bundlePEM)
	if err != nil {
		return fmt.Errorf("CA bundle: %w", err)
	}
	if !slices.ContainsFunc(cas, func(c *x509.Certificate) bool { return token.FingerprintDER(c.Raw) == fp }) {
		return fmt.Errorf("CA %s is not the one the token names (%s)", token.FingerprintDER(cas[0].Raw), fp)
	}
	return nil
}

// callPeer calls the membership service of peer, which must present the
// CA the token pins, and checks the answer against that CA: the one call
// a join and a rejoin make. An error without a reason word (the peer not
// reached) is unavailable; what goes wrong here is internal.
func callPeer(ctx context.Context, peer, caFingerprint, what string,
	call func(context.Context, api.MembershipServiceClient) (*api.JoinResponse, error)) (*api.JoinResponse, error) {
	conn, err := grpc.NewClient(peer, grpc.WithTransportCredentials(credentials.NewTLS(token.PinnedTLSConfig(caFingerprint))))
	if err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "peer %q: %v", peer, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	resp, err := call(ctx, api.NewMembershipServiceClient(conn))
	if err != nil {
		if reason.Of(err) == "" {
			return nil, reason.Error(codes.Unavailable, reason.Unavailable, "%s through %s: %v", what, peer, err)
		}
		return nil, err
	}
	if err := checkJoinResponse(resp, caFingerprint); err != nil {
		return nil, internalError(err)
	}
	return resp, nil
}

// saveJoinFiles saves what an admission gave this node, with its private
// key: its certificate files and the managers it may ask from now on.
func (f *Former) saveJoinFiles(resp *api.JoinResponse, keyPEM []byte) error {
	if err := f.keys.SaveNodeFiles(resp.CaCertPem, resp.CertPem, keyPEM); err != nil {
		return err
	}
	return roles.SaveManagers(f.cfg.Dir.JoinManagers(), api.MemberAddrs(resp.Members))
}

// checkJoinResponse makes sure the leader returned a certificate of the CA
// the token named.
func checkJoinResponse(resp *api.JoinResponse, wantFP string) error {
	if err := bundleNamed(resp.CaCertPem, wantFP); err != nil {
		return fmt.Errorf("join response: %w", err)
	}
	id, err := ca.IdentityFromPEM(resp.CertPem)
	if err != nil {
		return fmt.Errorf("join response: %w", err)
	}
	if id.NodeID != resp.NodeId || id.ClusterID != resp.ClusterId {
		return fmt.Errorf("join response certificate is for %s/%s, not %s/%s", id.ClusterID, id.NodeID, resp.ClusterId, resp.NodeId)
	}
	return nil
}
