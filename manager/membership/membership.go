// Package membership serves the leader side of a node joining the
// cluster: it checks the join token, signs the joiner's certificate with
// the role the token grants, adds a manager to raft as a nonvoter, and
// records the node in the transaction that consumes the token (NodeJoin). Its RPCs run on the leader; the raftproxy
// wrapper forwards them there from any manager.
package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/nodename"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/carotation"
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
	// caCheckedAt is when a poll that reported nothing new last checked
	// whether a CA rotation can move on (renew.go), in Unix nanoseconds.
	caCheckedAt atomic.Int64
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

// Join admits a node that presents a valid join token. Everything that
// can refuse the join is checked before the token is consumed, and the
// token is consumed in the transaction that records the node
// (docs/adr/0017): a refused join leaves the token for the next attempt.
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
	jt, err := jointoken.Find(s.store, req.Token, s.now())
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	j, err := s.signJoiner(cluster, req.Hostname, req.Address, req.CsrPem, jt.Role)
	if err != nil {
		return nil, err
	}
	commit := func(ctx context.Context, record func(tx *store.Tx) error) error {
		_, err := jointoken.Redeem(ctx, s.store, jt.Id, s.now(), record)
		return err
	}
	return s.admit(ctx, cluster, j, commit, "node joined")
}

// joiner is a node to admit whose certificate request has been signed:
// everything about it is checked and nothing has changed yet.
type joiner struct {
	hostname, address string
	role              api.NodeRole
	nodeID            string
	certPEM           []byte
}

// signJoiner gives the joiner a node id and signs its certificate request
// for role, which checks the request (invalid_spec when it is not one).
func (s *Server) signJoiner(cluster *api.Cluster, hostname, address string, csrPEM []byte, role api.NodeRole) (*joiner, error) {
	nodeID, err := identity.NewNodeID()
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	certPEM, err := s.sign(cluster, csrPEM, nodeID, certRole(role))
	if err != nil {
		return nil, err
	}
	return &joiner{hostname: hostname, address: address, role: role, nodeID: nodeID, certPEM: certPEM}, nil
}

// admit makes j a node: it adds a manager to raft as a nonvoter and
// records j's Node through commit, which may write more in the same
// transaction (the token's use). A refused commit takes the nonvoter out
// of raft again, so a refused join leaves no member behind. msg is what
// the log says.
func (s *Server) admit(ctx context.Context, cluster *api.Cluster, j *joiner,
	commit func(ctx context.Context, record func(tx *store.Tx) error) error, msg string) (*api.JoinResponse, error) {
	resp := &api.JoinResponse{
		ClusterId: cluster.Id, NodeId: j.nodeID, Role: j.role,
		CaCertPem: carotation.Bundle(cluster), CertPem: j.certPEM,
	}
	if j.role == api.NodeRole_NODE_ROLE_MANAGER {
		raftID, err := s.newRaftID()
		if err != nil {
			return nil, apierror.ToStatus(err)
		}
		member := &api.RaftMember{RaftId: raftID, NodeId: j.nodeID, Address: j.address}
		if err := s.raft.AddLearner(ctx, member); err != nil {
			return nil, apierror.ToStatus(fmt.Errorf("add %s to raft: %w", j.hostname, err))
		}
		resp.RaftId = raftID
	}
	now := timestamppb.New(s.now())
	node := &api.Node{
		Id: j.nodeID, Meta: &api.Meta{CreatedAt: now, UpdatedAt: now},
		Hostname: j.hostname, Address: j.address, Role: j.role, RaftId: resp.RaftId,
	}
	if err := commit(ctx, func(tx *store.Tx) error { return tx.Create(node) }); err != nil {
		if resp.RaftId != 0 && refused(err) {
			s.removeLearner(ctx, j.hostname, resp.RaftId)
		}
		return nil, apierror.ToStatus(fmt.Errorf("record node %s: %w", j.hostname, err))
	}
	// Every joiner learns the managers: a manager to reach raft, a worker
	// to find the dispatcher.
	resp.Members = s.raft.Members()
	s.log.Info(msg, "hostname", j.hostname, "node_id", j.nodeID, "role", certRole(j.role), "address", j.address)
	return resp, nil
}

// refused reports whether a commit certainly wrote nothing: the store or
// the token refused it. Other errors (leadership lost while proposing)
// leave it open whether the node was recorded.
func refused(err error) bool {
	for _, e := range []error{store.ErrExists, store.ErrVersionConflict, store.ErrNotFound, store.ErrInvalid,
		jointoken.ErrConsumed, jointoken.ErrExpired, jointoken.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// learnerRemovalTimeout bounds taking a refused joiner out of raft, which
// runs even when the joiner's call was cancelled.
const learnerRemovalTimeout = 10 * time.Second

// removeLearner takes the nonvoter a refused join added out of raft. A
// failure is logged, not returned: the joiner is told why its join was
// refused, and a nonvoter without a Node counts toward no quorum.
func (s *Server) removeLearner(ctx context.Context, hostname string, raftID uint64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), learnerRemovalTimeout)
	defer cancel()
	if err := s.raft.RemoveMember(ctx, raftID); err != nil {
		s.log.Warn("a refused join left its nonvoter in raft", "hostname", hostname, "raft_id", fmt.Sprintf("%x", raftID), "err", err)
		return
	}
	s.log.Info("a refused join's nonvoter removed from raft", "hostname", hostname, "raft_id", fmt.Sprintf("%x", raftID))
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
	if err := nodename.Check(hostname); err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "hostname: %v", err)
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "advertise address %s: %v", nodename.Quote(address), err)
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
