package node

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
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

func (s *clusterService) Join(context.Context, *api.JoinClusterRequest) (*api.JoinClusterResponse, error) {
	return nil, reason.Error(codes.Unimplemented, reason.InvalidSpec, "joining an existing cluster is not available in this build yet")
}

func (s *clusterService) Status(context.Context, *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	resp := &api.ClusterStatusResponse{State: s.n.State()}
	m := s.n.Manager()
	if m == nil {
		return resp, nil
	}
	resp.ClusterId = m.Raft.ClusterID()
	resp.NodeId = m.Raft.NodeID()
	resp.Members, resp.LeaderNodeId = m.Members()
	return resp, nil
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

func (s raftService) ResolveAddress(ctx context.Context, req *api.ResolveAddressRequest) (*api.ResolveAddressResponse, error) {
	svc, err := s.member()
	if err != nil {
		return nil, err
	}
	return svc.ResolveAddress(ctx, req)
}

// leader tells the raftproxy wrappers where the leader is.
type leader struct{ n *Node }

func (l leader) IsLeader() bool {
	m := l.n.Manager()
	return m != nil && m.Raft.IsLeader()
}

// LeaderConn: connections to other managers come with multi-manager
// clusters; until then a manager that is not leader has none to reach.
func (l leader) LeaderConn(context.Context) (grpc.ClientConnInterface, error) {
	return nil, reason.Error(codes.Unavailable, reason.NoLeader, "no raft leader is reachable from this manager")
}
