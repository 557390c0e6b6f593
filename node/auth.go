package node

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/access"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// identifyFunc establishes who is calling.
type identifyFunc func(ctx context.Context) (identity.Identity, error)

func localIdentity(context.Context) (identity.Identity, error) {
	return identity.Identity{Kind: identity.Local}, nil
}

var anonymous = identity.Identity{Kind: identity.Anonymous}

// tcpIdentity: a verified cluster certificate makes a node identity (a
// manager may speak for the caller it forwards); otherwise the operator
// token, if any; otherwise anonymous.
func (n *Node) tcpIdentity(ctx context.Context) (identity.Identity, error) {
	fwd, forwarded, err := identity.Forwarded(ctx)
	if err != nil {
		return anonymous, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "%v", err)
	}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 {
			nid, err := ca.IdentityFromCert(info.State.VerifiedChains[0][0])
			if err != nil {
				return anonymous, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "client certificate: %v", err)
			}
			if cid, _ := n.clusterID.Load().(string); cid == "" || nid.ClusterID != cid {
				return anonymous, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "client certificate is not of this cluster")
			}
			if forwarded {
				if nid.Role != ca.RoleManager {
					return anonymous, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "only managers forward calls")
				}
				return fwd, nil
			}
			return identity.Identity{Kind: identity.Node, NodeID: nid.NodeID, Role: nid.Role}, nil
		}
	}
	if forwarded {
		return anonymous, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "only managers forward calls")
	}
	tok := bearerToken(ctx)
	m := n.Manager()
	if tok == "" || m == nil {
		// Nothing to check, or nothing to check it against (no cluster
		// state here): what is left is open to anyone, or gated below.
		return anonymous, nil
	}
	if !n.operatorTokenValid(tok) {
		return anonymous, reason.Error(codes.Unauthenticated, reason.PermissionDenied, "operator token is not valid for this cluster")
	}
	return identity.Identity{Kind: identity.Operator}, nil
}

func bearerToken(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			return tok
		}
	}
	return ""
}

// raftPrefix names the raft traffic between managers, which the caller
// policy admits from managers' certificates and raftPeerRefused narrows.
const raftPrefix = "/jaco.api.RaftService/"

// authorize applies the access policy each rpc declares in its .proto
// (api/access, docs/design.md §10): the lifecycle gate before the caller
// is identified, then who may call. Raft traffic, which the policy admits
// from manager certificates, is refused too when the cluster no longer
// holds the certificate's node as a manager (raftPeerRefused).
func (n *Node) authorize(ctx context.Context, method string, identify identifyFunc) (context.Context, error) {
	if access.Open(method) {
		return ctx, nil
	}
	if err := access.Gate(method, n.accessState()); err != nil {
		return nil, err
	}
	id, err := identify(ctx)
	if err != nil {
		return nil, err
	}
	if err := access.Authorize(method, id); err != nil {
		return nil, err
	}
	if strings.HasPrefix(method, raftPrefix) {
		if why := n.raftPeerRefused(id.NodeID); why != "" {
			return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "raft traffic refused: %s", why)
		}
	}
	return identity.NewContext(ctx, id), nil
}

// accessState is the daemon's lifecycle state as the access policy knows it.
func (n *Node) accessState() access.State {
	switch {
	case !n.initialized():
		return access.Uninitialized
	case n.State() == api.NodeState_NODE_STATE_LOCKED:
		return access.Locked
	case n.Manager() == nil:
		return access.Worker
	}
	return access.Managing
}

// raftPeerRefused says why a caller with a manager certificate may not
// speak raft, or "": a certificate says manager until it expires, but a
// demoted node left the raft group. A removed raft member is refused by
// the raft service itself (node_removed); this gate refuses a node the
// store holds as no manager, which covers a demoted node whose removal
// this member has not applied yet, and any later use of its old
// certificate.
func (n *Node) raftPeerRefused(nodeID string) string {
	m := n.Manager()
	if m == nil {
		return "" // the raft service is not served: not_a_manager
	}
	if m.IsRemovedNode(nodeID) {
		// The raft service answers node_removed, which tells a removed
		// member to stop.
		return ""
	}
	if node := m.Node(nodeID); node != nil && node.Role != api.NodeRole_NODE_ROLE_MANAGER {
		return "node " + nodeID + " is not a manager any more"
	}
	return ""
}

func (n *Node) unaryAuth(identify identifyFunc) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := n.authorize(ctx, info.FullMethod, identify)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func (n *Node) streamAuth(identify identifyFunc) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := n.authorize(ss.Context(), info.FullMethod, identify)
		if err != nil {
			return err
		}
		return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	}
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }
