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
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// Full method names the policy below names.
const (
	methodInit   = "/jaco.api.ClusterService/Init"
	methodJoin   = "/jaco.api.ClusterService/Join"
	methodStatus = "/jaco.api.ClusterService/Status"
	// methodAdmit is the leader side of a join; the token is the proof.
	methodAdmit = "/jaco.api.MembershipService/Join"
	// methodRenew is a node renewing its own certificate.
	methodRenew = "/jaco.api.MembershipService/RenewCertificate"
	raftPrefix  = "/jaco.api.RaftService/"
	// clusterPrefix is the daemon's own service, served in every state.
	clusterPrefix = "/jaco.api.ClusterService/"
	// dispatcherPrefix is the agents' side of the cluster: nodes only.
	dispatcherPrefix = "/jaco.api.DispatcherService/"
	// agentPrefix is every node's own agent, workers' too.
	agentPrefix = "/jaco.api.AgentService/"
	methodLogs  = agentPrefix + "Logs"
	// methodLocalReplicas lists what this node's agent runs.
	methodLocalReplicas = agentPrefix + "ListLocalReplicas"
	// healthPrefix is grpc.health.v1, open to anyone in every state:
	// supervisors probe without credentials (node/health.go).
	healthPrefix    = "/grpc.health.v1.Health/"
	methodLoadImage = agentPrefix + "LoadImage"
	// methodUnlock gives a locked manager its unlock key.
	methodUnlock = "/jaco.api.NodeService/Unlock"
)

// The lifecycle gate's refusals.
var (
	errUninitialized = reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized,
		"this node is not part of a cluster yet: run 'jaco cluster init' or 'jaco node join'")
	errLocked = reason.Error(codes.FailedPrecondition, reason.Locked,
		"this manager is locked: autolock is on and it restarted; run 'jaco node unlock' on it")
	errWorker = reason.Error(codes.FailedPrecondition, reason.NotAManager,
		"this node is a worker; ask a manager (jaco --server MANAGER:7000)")
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
	t, err := ca.ParseToken(tok)
	c := m.Cluster()
	if err != nil || c == nil || !ca.HashMatches(c.OperatorTokenHash, t) {
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

// authorize applies the lifecycle gate, then the per-method policy.
func (n *Node) authorize(ctx context.Context, method string, identify identifyFunc) (context.Context, error) {
	if strings.HasPrefix(method, healthPrefix) {
		return ctx, nil
	}
	if !n.initialized() && method != methodInit && method != methodJoin && method != methodStatus {
		return nil, errUninitialized
	}
	if n.State() == api.NodeState_NODE_STATE_LOCKED && method != methodStatus && method != methodUnlock {
		return nil, errLocked
	}
	if n.initialized() && n.Manager() == nil && method != methodUnlock && !strings.HasPrefix(method, clusterPrefix) && !strings.HasPrefix(method, agentPrefix) {
		return nil, errWorker
	}
	id, err := identify(ctx)
	if err != nil {
		return nil, err
	}
	ctx = identity.NewContext(ctx, id)
	if handled, err := formationPolicy(method, id); handled {
		return ctx, err
	}
	switch {
	case method == methodStatus, method == methodJoin, method == methodAdmit:
		return ctx, nil // anyone may ask; a join proves itself with its token
	case method == methodInit:
		if id.Kind == identity.Local {
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "cluster init is accepted only on the local socket")
	case method == methodRenew:
		if id.Kind == identity.Node {
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "a node renews its certificate with its certificate")
	case strings.HasPrefix(method, raftPrefix):
		if id.Kind == identity.Node && id.Role == ca.RoleManager {
			if why := n.raftPeerRefused(id.NodeID); why != "" {
				return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "raft traffic refused: %s", why)
			}
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "raft traffic is accepted only from managers of this cluster")
	case strings.HasPrefix(method, dispatcherPrefix):
		if id.Kind == identity.Node {
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "the dispatcher serves the agents of this cluster's nodes only")
	case method == methodLogs, method == methodLocalReplicas:
		// Managers fetch replica logs for `jaco service logs`.
		if id.Kind == identity.Local || id.Kind == identity.Operator || (id.Kind == identity.Node && id.Role == ca.RoleManager) {
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "replica logs are for managers and operators")
	case method == methodUnlock:
		if id.Kind == identity.Local {
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied,
			"a node is unlocked through its local socket only: the key must not travel to a server that cannot prove who it is")
	case method == methodLoadImage:
		if id.Kind == identity.Local {
			return ctx, nil
		}
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "images are loaded on the node itself, through its local socket")
	default:
		if id.Kind == identity.Local || id.Kind == identity.Operator {
			return ctx, nil
		}
		return nil, reason.Error(codes.Unauthenticated, reason.PermissionDenied, "this call needs the operator token (JACO_TOKEN) or the local socket")
	}
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
		return "" // raftService answers not_a_manager
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
