package raft

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// maxStreamedMessage bounds the encoded size of one raft message received
// over StreamRaftMessage. It is far above any snapshot this store makes;
// its job is to stop a broken or hostile peer from exhausting memory.
// A variable so tests can lower it.
var maxStreamedMessage = 1 << 30

// StreamRaftMessage receives one raft message too large for a unary call
// (a snapshot) as a stream of chunks, then steps it like
// ProcessRaftMessage.
func (s *Service) StreamRaftMessage(stream api.RaftService_StreamRaftMessageServer) error {
	var buf []byte
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("receive raft message chunk: %w", err)
		}
		if len(buf)+len(req.Chunk) > maxStreamedMessage {
			return reason.Error(codes.InvalidArgument, reason.InvalidSpec,
				"streamed raft message exceeds %d bytes", maxStreamedMessage)
		}
		buf = append(buf, req.Chunk...)
	}
	if err := s.stepEncoded(stream.Context(), buf); err != nil {
		return err
	}
	return stream.SendAndClose(&api.StreamRaftMessageResponse{})
}

// stepEncoded decodes a raft message (raftpb encoding) and steps it into
// the member, mapping failures to the API's reason words: a message that
// does not decode is invalid_spec, one from a removed member node_removed
// (the sender is the removed one), one whose From is not the sender's own
// raft member permission_denied, anything else unavailable.
func (s *Service) stepEncoded(ctx context.Context, b []byte) error {
	if err := s.refuseRemoved(ctx); err != nil {
		return err
	}
	m, snap, err := decodeMessage(b)
	if err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "%v", err)
	}
	if m.From == 0 || m.From == s.node.RaftID() {
		// raft answers a heartbeat from itself with a message to itself,
		// and panics sending it (FuzzStepEncoded found it): no peer's
		// message comes from this member, or from no member.
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "raft message from member %x refused: not a peer of member %x", m.From, s.node.RaftID())
	}
	// A manager's certificate speaks for its own raft member only: any
	// manager could otherwise vote or append in another member's name.
	// The daemon's interceptor always names the caller; a Service used
	// without one (tests of the transport alone) has no one to check.
	if id, ok := identity.FromContext(ctx); ok && !s.node.members.speaksFor(id.NodeID, m.From) {
		return reason.Error(codes.PermissionDenied, reason.PermissionDenied,
			"raft message from member %x refused: the sender's certificate is node %s, which is not that member", m.From, id.NodeID)
	}
	if snap != nil {
		s.node.keepDecoded(m.Snapshot.Metadata, snap)
	}
	if err := s.node.Step(ctx, m); err != nil {
		if snap != nil {
			s.node.takeDecoded(m.Snapshot.Metadata) // raft never got it
		}
		if errors.Is(err, ErrMemberRemoved) {
			return reason.Error(codes.PermissionDenied, reason.NodeRemoved, "raft member %x was removed from the cluster", m.From)
		}
		return reason.Error(codes.Unavailable, reason.Unavailable, "%v", err)
	}
	return nil
}

// decodeMessage decodes a raft message from a peer and refuses those etcd's
// raft would crash on rather than refuse, a panic that takes the whole
// daemon down (all found by FuzzStepEncoded): a type it does not know
// indexes its tables out of range (IsLocalMsg); a message without a term
// is taken as a local one and skips the term checks, so a heartbeat
// without one commits past the end of the log; an empty proposal or a
// read request without its entry panics the leader. A snapshot whose data
// does not decode is refused too; one that does is returned decoded, for
// the member to install without decoding it again. No peer sends a
// proposal at all, since members do not forward them
// (Config.DisableProposalForwarding), so every MsgProp is refused.
func decodeMessage(b []byte) (raftpb.Message, *api.RaftSnapshot, error) {
	var m raftpb.Message
	if err := m.Unmarshal(b); err != nil {
		return raftpb.Message{}, nil, fmt.Errorf("decode raft message: %w", err)
	}
	if _, ok := raftpb.MessageType_name[int32(m.Type)]; !ok {
		return raftpb.Message{}, nil, fmt.Errorf("raft message of unknown type %d", m.Type)
	}
	switch {
	case m.Term == 0 && m.Type != raftpb.MsgReadIndex:
		// raft takes a message without a term as a local one and skips
		// its term checks: a heartbeat then commits past the end of the
		// log and panics. Every peer message carries the sender's term
		// but a forwarded read request (raft's own rule when it sends).
		return raftpb.Message{}, nil, fmt.Errorf("raft message of type %s carries no term", m.Type)
	case m.Type == raftpb.MsgProp:
		return raftpb.Message{}, nil, errors.New("raft message of type MsgProp: members do not forward proposals")
	case m.Type == raftpb.MsgReadIndex && len(m.Entries) != 1:
		// A follower forwards a read request as one entry holding its
		// context; the leader indexes that entry without checking.
		return raftpb.Message{}, nil, fmt.Errorf("raft message of type MsgReadIndex holds %d entries, want 1", len(m.Entries))
	case m.Type == raftpb.MsgSnap:
		// Raft takes a snapshot in before this member decodes it; one
		// that does not decode would then stop the member for good.
		var data []byte
		if m.Snapshot != nil {
			data = m.Snapshot.Data
		}
		rs, err := decodeSnapshot(data)
		if err != nil {
			return raftpb.Message{}, nil, fmt.Errorf("the snapshot in a raft message: %w", err)
		}
		if m.Snapshot != nil {
			return m, rs, nil
		}
	}
	return m, nil, nil
}
