package node

import (
	"context"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/access"
)

// managerService is the implementation of now of one of the manager's
// services (manager.ServiceDescs), or the refusal a daemon without a
// manager answers with: the same the lifecycle gate (auth.go) gives.
func (n *Node) managerService(name string) (any, error) {
	if m := n.Manager(); m != nil {
		return m.Service(name), nil
	}
	return nil, n.noManager()
}

// noManager refuses a call that needs the manager this daemon does not
// run, with the lifecycle gate's words for its state.
func (n *Node) noManager() error {
	if err := access.NotServed(n.accessState()); err != nil {
		return err
	}
	return access.NotServed(access.Worker) // it stopped meanwhile: a demotion
}

// clusterService answers for this daemon in every lifecycle state.
type clusterService struct {
	api.UnimplementedClusterServiceServer
	n *Node
}

func (s *clusterService) Init(ctx context.Context, req *api.InitClusterRequest) (*api.InitClusterResponse, error) {
	return s.n.formation.Init(ctx, req)
}

func (s *clusterService) Join(ctx context.Context, req *api.JoinClusterRequest) (*api.JoinClusterResponse, error) {
	return s.n.formation.Join(ctx, req)
}

func (s *clusterService) Status(ctx context.Context, _ *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	resp := &api.ClusterStatusResponse{State: s.n.State(), FailedUnlockAttempts: s.n.keys.FailedUnlocks()}
	m := s.n.Manager()
	if m == nil {
		// A worker knows its cluster from its certificate, and no more.
		resp.ClusterId, _ = s.n.clusterID.Load().(string)
		return resp, nil
	}
	resp.ClusterId = m.ClusterID()
	resp.NodeId = m.NodeID()
	resp.Members, resp.LeaderNodeId = m.Members()
	resp.QuorumLost = m.QuorumLost()
	resp.RaftTerm = m.RaftTerm()
	resp.CaRotation, resp.CaFingerprint = m.CAStatus()
	if c := m.Cluster(); c != nil {
		resp.BackupSchedule, resp.LastBackup = c.BackupSchedule, c.LastBackup
	}
	if !m.IsLeader() && resp.LeaderNodeId != "" {
		s.reachabilityFromLeader(ctx, resp.Members)
	}
	return resp, nil
}

// reachabilityFromLeader fills in what only the leader knows: whether the
// other members answer it. Best effort, briefly: the local view stands
// when the leader cannot say.
func (s *clusterService) reachabilityFromLeader(ctx context.Context, members []*api.Member) {
	m := s.n.Manager()
	if m == nil {
		return
	}
	conn, err := m.LeaderConn(ctx)
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
