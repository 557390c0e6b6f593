package raft

import (
	"context"
	"errors"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// Service serves the Raft gRPC service for a member. It is registered
// directly, never behind a raftproxy wrapper: followers must receive the
// leader's messages themselves.
type Service struct {
	api.UnimplementedRaftServiceServer
	node *Node
}

// NewService returns the Raft service of n.
func NewService(n *Node) *Service { return &Service{node: n} }

// ProcessRaftMessage steps one raft message (raftpb encoding) into the member.
func (s *Service) ProcessRaftMessage(ctx context.Context, req *api.ProcessRaftMessageRequest) (*api.ProcessRaftMessageResponse, error) {
	var m raftpb.Message
	if err := m.Unmarshal(req.Message); err != nil {
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "decode raft message: %v", err)
	}
	if err := s.node.Step(ctx, m); err != nil {
		if errors.Is(err, ErrMemberRemoved) {
			return nil, reason.Error(codes.PermissionDenied, reason.NodeRemoved, "raft member %x was removed from the cluster", m.From)
		}
		return nil, reason.Error(codes.Unavailable, reason.Unavailable, "%v", err)
	}
	return &api.ProcessRaftMessageResponse{}, nil
}

// ResolveAddress answers with the address this member knows for a raft id.
func (s *Service) ResolveAddress(_ context.Context, req *api.ResolveAddressRequest) (*api.ResolveAddressResponse, error) {
	addr, ok := s.node.ResolveAddress(req.RaftId)
	if !ok {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "raft member %x is not known here", req.RaftId)
	}
	return &api.ResolveAddressResponse{Address: addr}, nil
}
