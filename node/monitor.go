package node

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// monitorService is this node's end of the monitor heartbeats
// (docs/adr/0042): it records which nodes heartbeat to it and tells the
// leader when it last heard one. Every node serves it, workers and
// locked managers included: a monitor is any node.
type monitorService struct {
	api.UnimplementedMonitorServiceServer
	n *Node
}

func (s monitorService) Heartbeat(ctx context.Context, _ *api.MonitorHeartbeatRequest) (*api.MonitorHeartbeatResponse, error) {
	id, ok := identity.FromContext(ctx)
	if !ok || id.Kind != identity.Node || id.NodeID == "" {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "monitor heartbeats come from nodes")
	}
	s.n.monitors.Heard(id.NodeID)
	return &api.MonitorHeartbeatResponse{}, nil
}

func (s monitorService) LastHeard(_ context.Context, req *api.LastHeardRequest) (*api.LastHeardResponse, error) {
	ago, ok := s.n.monitors.LastHeard(req.GetNodeId())
	if !ok {
		return &api.LastHeardResponse{}, nil
	}
	return &api.LastHeardResponse{Heard: true, Ago: durationpb.New(ago)}, nil
}
