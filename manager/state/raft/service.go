package raft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// Service serves the Raft gRPC service for a member. It is registered
// directly, never behind a raftproxy wrapper: followers must receive the
// leader's messages themselves.
type Service struct {
	api.UnimplementedRaftServiceServer
	node *Node
	// ending is closed by EndStreams.
	ending  chan struct{}
	endOnce sync.Once
}

// NewService returns the Raft service of n.
func NewService(n *Node) *Service { return &Service{node: n, ending: make(chan struct{})} }

// EndStreams ends the peers' RaftMessages streams into this member, and
// refuses new ones, as unavailable. A stopping daemon calls it before its
// server's graceful stop, which would otherwise wait for the streams: the
// peers keep them open for good.
func (s *Service) EndStreams() { s.endOnce.Do(func() { close(s.ending) }) }

// ProcessRaftMessage steps one raft message (raftpb encoding) into the member.
func (s *Service) ProcessRaftMessage(ctx context.Context, req *api.ProcessRaftMessageRequest) (*api.ProcessRaftMessageResponse, error) {
	if err := s.stepBatch(ctx, req.Messages); err != nil {
		return nil, err
	}
	return &api.ProcessRaftMessageResponse{}, nil
}

// stepBatch steps a batch of encoded messages in order, up to the first
// refused.
func (s *Service) stepBatch(ctx context.Context, msgs [][]byte) error {
	for _, m := range msgs {
		if err := s.stepEncoded(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// RaftMessages steps the messages of a peer's stream in order as they
// arrive, and ends the stream with the first refusal (stepEncoded's
// reasons), which the sender reads as it would a refused call.
func (s *Service) RaftMessages(stream api.RaftService_RaftMessagesServer) error {
	stopping := reason.Error(codes.Unavailable, reason.Unavailable, "raft member %x is stopping", s.node.RaftID())
	select {
	case <-s.ending:
		return stopping
	default:
	}
	received := make(chan error, 1)
	go func() { received <- s.receive(stream) }()
	select {
	case err := <-received:
		if err == nil { // the sender closed the stream
			return stream.SendAndClose(&api.ProcessRaftMessageResponse{})
		}
		return err
	case <-s.ending:
		// Returning ends the stream, and with it the receiving
		// goroutine, blocked in Recv or not.
		return stopping
	}
}

// receive steps the batches of stream until it ends (nil when the sender
// closed it) or one is refused. It only receives: whatever goes back is
// sent by the handler's own goroutine.
func (s *Service) receive(stream api.RaftService_RaftMessagesServer) error {
	ctx := stream.Context()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("receive raft messages: %w", err)
		}
		if err := s.stepBatch(ctx, req.Messages); err != nil {
			return err
		}
	}
}

// ResolveAddress answers with the address this member knows for a raft id.
func (s *Service) ResolveAddress(ctx context.Context, req *api.ResolveAddressRequest) (*api.ResolveAddressResponse, error) {
	if err := s.refuseRemoved(ctx); err != nil {
		return nil, err
	}
	addr, ok := s.node.ResolveAddress(req.RaftId)
	if !ok {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "raft member %x is not known here", req.RaftId)
	}
	return &api.ResolveAddressResponse{Address: addr}, nil
}

// refuseRemoved answers node_removed to a caller whose certificate names a
// node removed from the raft group: that is how a removed member that
// missed its own removal (it was down, or the leader stopped talking to it
// first) finds out.
func (s *Service) refuseRemoved(ctx context.Context) error {
	id, ok := identity.FromContext(ctx)
	if ok && id.Kind == identity.Node && s.node.IsRemovedNode(id.NodeID) {
		return reason.Error(codes.PermissionDenied, reason.NodeRemoved, "node %s was removed from the cluster", id.NodeID)
	}
	return nil
}
