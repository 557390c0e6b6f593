// Package membership serves the leader side of a node joining the
// cluster: it redeems the join token, signs the joiner's certificate with
// the role the token grants, adds a manager to raft as a nonvoter, and
// records the node (NodeJoin). Its RPCs run on the leader; the raftproxy
// wrapper forwards them there from any manager.
package membership

import (
	"context"
	"errors"
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
	"github.com/jaco-project/jaco/manager/controlapi"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Raft is the leader's raft member as joins and removals need it.
type Raft interface {
	RaftID() uint64
	AddLearner(ctx context.Context, m *api.RaftMember) error
	Members() []*api.RaftMember
	IsRemoved(raftID uint64) bool
	// RemoveMember and HandOver are rolemanager's voter-safe removal and
	// leadership handover.
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
}

// New returns the membership server of a manager.
func New(st *store.Store, r Raft, log *slog.Logger) *Server {
	return &Server{store: st, raft: r, log: log, now: time.Now}
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
		return nil, controlapi.ToStatus(err)
	}
	nodeID, err := identity.NewNodeID()
	if err != nil {
		return nil, controlapi.ToStatus(err)
	}
	role := ca.RoleWorker
	if jt.Role == api.NodeRole_NODE_ROLE_MANAGER {
		role = ca.RoleManager
	}
	signer, err := ca.NewSigner(cluster.CaCertPem, cluster.CaKeyPem)
	if err != nil {
		return nil, controlapi.ToStatus(fmt.Errorf("cluster CA: %w", err))
	}
	certPEM, err := signer.Sign(req.CsrPem, nodeID, role, cluster.Id, 0)
	if err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "sign certificate request: %v", err)
	}
	resp := &api.JoinResponse{
		ClusterId: cluster.Id, NodeId: nodeID, Role: jt.Role,
		CaCertPem: cluster.CaCertPem, CertPem: certPEM,
	}
	if jt.Role == api.NodeRole_NODE_ROLE_MANAGER {
		raftID, err := s.newRaftID()
		if err != nil {
			return nil, controlapi.ToStatus(err)
		}
		member := &api.RaftMember{RaftId: raftID, NodeId: nodeID, Address: req.Address}
		if err := s.raft.AddLearner(ctx, member); err != nil {
			return nil, controlapi.ToStatus(fmt.Errorf("add %s to raft: %w", req.Hostname, err))
		}
		resp.RaftId = raftID
		resp.Members = s.raft.Members()
	}
	now := timestamppb.New(s.now())
	node := &api.Node{
		Id: nodeID, Meta: &api.Meta{CreatedAt: now, UpdatedAt: now},
		Hostname: req.Hostname, Address: req.Address, Role: jt.Role, RaftId: resp.RaftId,
	}
	if err := s.store.Update(ctx, func(tx *store.Tx) error { return tx.Create(node) }); err != nil {
		return nil, controlapi.ToStatus(fmt.Errorf("record node %s: %w", req.Hostname, err))
	}
	s.log.Info("node joined", "hostname", req.Hostname, "node_id", nodeID, "role", role, "address", req.Address)
	return resp, nil
}

func validate(req *api.JoinRequest) error {
	if strings.TrimSpace(req.Hostname) == "" {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "a joining node must name itself")
	}
	if _, _, err := net.SplitHostPort(req.Address); err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "advertise address %q: %v", req.Address, err)
	}
	if len(req.CsrPem) == 0 {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "no certificate request")
	}
	return nil
}

func (s *Server) cluster() (*api.Cluster, error) {
	var c *api.Cluster
	s.store.View(func(tx store.ReadTx) {
		if cs := tx.ListClusters(); len(cs) > 0 {
			c = cs[0]
		}
	})
	if c == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "the cluster object is not there yet")
	}
	return c, nil
}

// newRaftID draws a raft id that no member has and none ever had.
func (s *Server) newRaftID() (uint64, error) {
	for range 16 {
		id, err := raft.NewRaftID()
		if err != nil {
			return 0, err
		}
		if !s.raft.IsRemoved(id) && !inUse(s.raft.Members(), id) {
			return id, nil
		}
	}
	return 0, errors.New("could not draw an unused raft id")
}

func inUse(members []*api.RaftMember, id uint64) bool {
	for _, m := range members {
		if m.RaftId == id {
			return true
		}
	}
	return false
}
