package node

import (
	"context"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager"
	"github.com/jaco-project/jaco/manager/rolemanager"
	"github.com/jaco-project/jaco/manager/state/raft"
)

// clusterService answers for this daemon in every lifecycle state.
type clusterService struct {
	api.UnimplementedClusterServiceServer
	n *Node
}

func (s *clusterService) Init(ctx context.Context, _ *api.InitClusterRequest) (*api.InitClusterResponse, error) {
	return s.n.initCluster(ctx)
}

func (s *clusterService) Join(ctx context.Context, req *api.JoinClusterRequest) (*api.JoinClusterResponse, error) {
	return s.n.joinCluster(ctx, req)
}

func (s *clusterService) Status(ctx context.Context, _ *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	resp := &api.ClusterStatusResponse{State: s.n.State(), FailedUnlockAttempts: s.n.failedUnlocks.Load()}
	m := s.n.Manager()
	if m == nil {
		// A worker knows its cluster from its certificate, and no more.
		resp.ClusterId, _ = s.n.clusterID.Load().(string)
		return resp, nil
	}
	resp.ClusterId = m.Raft.ClusterID()
	resp.NodeId = m.Raft.NodeID()
	resp.Members, resp.LeaderNodeId = m.Members()
	resp.QuorumLost = s.n.quorumLost()
	if !m.Raft.IsLeader() && resp.LeaderNodeId != "" {
		s.reachabilityFromLeader(ctx, resp.Members)
	}
	return resp, nil
}

// reachabilityFromLeader fills in what only the leader knows: whether the
// other members answer it. Best effort, briefly: the local view stands
// when the leader cannot say.
func (s *clusterService) reachabilityFromLeader(ctx context.Context, members []*api.Member) {
	conn, err := leader{s.n}.LeaderConn(ctx)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	theirs, err := api.NewClusterServiceClient(conn).Status(ctx, &api.ClusterStatusRequest{})
	if err != nil {
		return
	}
	status := make(map[uint64]api.MemberStatus, len(theirs.Members))
	for _, m := range theirs.Members {
		status[m.RaftId] = m.Status
	}
	for _, m := range members {
		if st, ok := status[m.RaftId]; ok && m.Status == api.MemberStatus_MEMBER_STATUS_UNSPECIFIED {
			m.Status = st
		}
	}
}

// raftService hands raft traffic to the manager's member; the auth gate
// refuses it before init, so the manager is there when it is reached.
type raftService struct {
	api.UnimplementedRaftServiceServer
	n *Node
}

func (s raftService) member() (*raft.Service, error) {
	m := s.n.Manager()
	if m == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.NotAManager, "this node runs no raft member")
	}
	return raft.NewService(m.Raft), nil
}

func (s raftService) ProcessRaftMessage(ctx context.Context, req *api.ProcessRaftMessageRequest) (*api.ProcessRaftMessageResponse, error) {
	svc, err := s.member()
	if err != nil {
		return nil, err
	}
	return svc.ProcessRaftMessage(ctx, req)
}

func (s raftService) StreamRaftMessage(stream api.RaftService_StreamRaftMessageServer) error {
	svc, err := s.member()
	if err != nil {
		return err
	}
	return svc.StreamRaftMessage(stream)
}

func (s raftService) ResolveAddress(ctx context.Context, req *api.ResolveAddressRequest) (*api.ResolveAddressResponse, error) {
	svc, err := s.member()
	if err != nil {
		return nil, err
	}
	return svc.ResolveAddress(ctx, req)
}

// managerRaft gives the membership server the raft member of whatever
// manager runs now; the auth gate keeps calls out until there is one.
type managerRaft struct{ n *Node }

func (r managerRaft) member() (*raft.Node, error) {
	m := r.n.Manager()
	if m == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.NotAManager, "this node runs no raft member")
	}
	return m.Raft, nil
}

func (r managerRaft) AddLearner(ctx context.Context, mem *api.RaftMember) error {
	rn, err := r.member()
	if err != nil {
		return err
	}
	return rn.AddLearner(ctx, mem)
}

func (r managerRaft) Members() []*api.RaftMember {
	rn, err := r.member()
	if err != nil {
		return nil
	}
	return rn.Members()
}

func (r managerRaft) IsRemoved(raftID uint64) bool {
	rn, err := r.member()
	return err == nil && rn.IsRemoved(raftID)
}

func (r managerRaft) RaftID() uint64 {
	rn, err := r.member()
	if err != nil {
		return 0
	}
	return rn.RaftID()
}

func (r managerRaft) RemoveMember(ctx context.Context, raftID uint64) error {
	m := r.n.Manager()
	if m == nil {
		return reason.Error(codes.FailedPrecondition, reason.NotAManager, "this node runs no raft member")
	}
	return m.Voters.RemoveMember(ctx, raftID)
}

func (r managerRaft) HandOver(ctx context.Context) (uint64, error) {
	m := r.n.Manager()
	if m == nil {
		return 0, reason.Error(codes.FailedPrecondition, reason.NotAManager, "this node runs no raft member")
	}
	return m.Voters.HandOver(ctx)
}

func (r managerRaft) Status() etcdraft.Status {
	rn, err := r.member()
	if err != nil {
		return etcdraft.Status{}
	}
	return rn.Status()
}

// roleSubsystem is the leader's role reconciler (promote / demote).
func (n *Node) roleSubsystem() manager.Subsystem {
	r := rolemanager.NewRoleReconciler(rolemanager.RoleConfig{
		Store:     n.store,
		Raft:      managerRaft{n},
		Members:   managerRaft{n},
		NewRaftID: raft.NewRaftID,
		Logger:    n.log.With("component", "role-reconciler"),
	})
	return manager.Subsystem{Name: "role-reconciler", Run: r.Run}
}
