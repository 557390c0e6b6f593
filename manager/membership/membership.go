// Package membership serves the leader side of a node joining the
// cluster: it redeems the join token, signs the joiner's certificate with
// the role the token grants, adds a manager to raft as a nonvoter, and
// records the node (NodeJoin). Its RPCs run on the leader; the raftproxy
// wrapper forwards them there from any manager.
package membership

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Raft is the leader's raft member as joins and removals need it.
type Raft interface {
	RaftID() uint64
	AddLearner(ctx context.Context, m *api.RaftMember) error
	// UpdateMember rewrites a member's address (formation rejoin).
	UpdateMember(ctx context.Context, m *api.RaftMember) error
	Members() []*api.RaftMember
	IsRemoved(raftID uint64) bool
	// RemoveMember and HandOver are the role manager's voter-safe removal
	// and leadership handover; they refuse with the voterset errors
	// (ErrNoSuchMember, ErrNotLeading, ErrLastManager), which RemoveNode
	// turns into what the operator sees.
	RemoveMember(ctx context.Context, raftID uint64) error
	HandOver(ctx context.Context) (uint64, error)
}

// Server implements api.MembershipServiceServer.
type Server struct {
	api.UnimplementedMembershipServiceServer
	store *store.Store
	raft  Raft
	log   *slog.Logger
	now   func() time.Time
	// certTTL is the lifetime of the certificates it signs (0: the CA's
	// default, 90 days).
	certTTL time.Duration
}

// Option configures a Server.
type Option func(*Server)

// WithCertLifetime sets the lifetime of the node certificates the server
// signs at join and renewal (0: ca.DefaultCertTTL). Tests shorten it.
func WithCertLifetime(d time.Duration) Option { return func(s *Server) { s.certTTL = d } }

// New returns the membership server of a manager.
func New(st *store.Store, r Raft, log *slog.Logger, opts ...Option) *Server {
	s := &Server{store: st, raft: r, log: log, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Join admits a node that presents a valid join token.
func (s *Server) Join(ctx context.Context, req *api.JoinRequest) (*api.JoinResponse, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	cluster, err := s.cluster()
	if err != nil {
		return nil, err
	}
	var taken bool
	s.store.View(func(tx store.ReadTx) { taken = tx.FindNodeByHostname(req.Hostname) != nil })
	if taken {
		return nil, reason.Error(codes.AlreadyExists, reason.InvalidSpec, "a node named %q is already in the cluster", req.Hostname)
	}
	jt, err := jointoken.Redeem(ctx, s.store, req.Token, s.now())
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return s.admit(ctx, cluster, req.Hostname, req.Address, req.CsrPem, jt.Role, "node joined")
}

// admit makes a node of role: it signs its certificate, adds a manager to
// raft as a nonvoter, and records its Node. msg is what the log says.
func (s *Server) admit(ctx context.Context, cluster *api.Cluster, hostname, address string, csrPEM []byte, role api.NodeRole, msg string) (*api.JoinResponse, error) {
	nodeID, err := identity.NewNodeID()
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	certPEM, err := s.sign(cluster, csrPEM, nodeID, certRole(role))
	if err != nil {
		return nil, err
	}
	resp := &api.JoinResponse{
		ClusterId: cluster.Id, NodeId: nodeID, Role: role,
		CaCertPem: cluster.CaCertPem, CertPem: certPEM,
	}
	if role == api.NodeRole_NODE_ROLE_MANAGER {
		raftID, err := s.newRaftID()
		if err != nil {
			return nil, apierror.ToStatus(err)
		}
		member := &api.RaftMember{RaftId: raftID, NodeId: nodeID, Address: address}
		if err := s.raft.AddLearner(ctx, member); err != nil {
			return nil, apierror.ToStatus(fmt.Errorf("add %s to raft: %w", hostname, err))
		}
		resp.RaftId = raftID
	}
	// Every joiner learns the managers: a manager to reach raft, a worker
	// to find the dispatcher.
	resp.Members = s.raft.Members()
	now := timestamppb.New(s.now())
	node := &api.Node{
		Id: nodeID, Meta: &api.Meta{CreatedAt: now, UpdatedAt: now},
		Hostname: hostname, Address: address, Role: role, RaftId: resp.RaftId,
	}
	if err := s.store.Update(ctx, func(tx *store.Tx) error { return tx.Create(node) }); err != nil {
		return nil, apierror.ToStatus(fmt.Errorf("record node %s: %w", hostname, err))
	}
	s.log.Info(msg, "hostname", hostname, "node_id", nodeID, "role", certRole(role), "address", address)
	return resp, nil
}

func validate(req *api.JoinRequest) error {
	if err := validateNameAndAddress(req.Hostname, req.Address); err != nil {
		return err
	}
	if len(req.CsrPem) == 0 {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "no certificate request")
	}
	return nil
}

// validateNameAndAddress checks the name and the advertise address a
// joiner gives.
func validateNameAndAddress(hostname, address string) error {
	if strings.TrimSpace(hostname) == "" {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "a joining node must name itself")
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "advertise address %q: %v", address, err)
	}
	return nil
}

// certRole is the certificate role (OU) of a node of role r.
func certRole(r api.NodeRole) string {
	if r == api.NodeRole_NODE_ROLE_MANAGER {
		return ca.RoleManager
	}
	return ca.RoleWorker
}

// sign signs csrPEM with the cluster's CA for nodeID in role, for the
// server's certificate lifetime. Its errors are gRPC statuses.
func (s *Server) sign(cluster *api.Cluster, csrPEM []byte, nodeID, role string) ([]byte, error) {
	signer, err := ca.NewSigner(cluster.CaCertPem, cluster.CaKeyPem)
	if err != nil {
		return nil, apierror.ToStatus(fmt.Errorf("cluster CA: %w", err))
	}
	certPEM, err := signer.Sign(csrPEM, nodeID, role, cluster.Id, s.certTTL)
	if err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "sign certificate request: %v", err)
	}
	return certPEM, nil
}

func (s *Server) cluster() (*api.Cluster, error) {
	var c *api.Cluster
	s.store.View(func(tx store.ReadTx) { c = tx.Cluster() })
	if c == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "the cluster object is not there yet")
	}
	return c, nil
}

// newRaftID draws a raft id that no member has and none ever had.
func (s *Server) newRaftID() (uint64, error) {
	members := s.raft.Members()
	return raft.UnusedRaftID(raft.NewRaftID, func(id uint64) bool { return s.raft.IsRemoved(id) || inUse(members, id) })
}

func inUse(members []*api.RaftMember, id uint64) bool {
	for _, m := range members {
		if m.RaftId == id {
			return true
		}
	}
	return false
}
