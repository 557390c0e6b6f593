package raft

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// sentMessages is a Transport that records what the member sends.
type sentMessages struct {
	mu   sync.Mutex
	msgs []raftpb.Message
}

func (s *sentMessages) Send(msgs []raftpb.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
}

func (s *sentMessages) AddPeer(uint64, string) error { return nil }

func (s *sentMessages) RemovePeer(uint64) {}

func (s *sentMessages) to(id uint64) []raftpb.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []raftpb.Message
	for _, m := range s.msgs {
		if m.To == id {
			out = append(out, m)
		}
	}
	return out
}

// waitAnswers waits until raft has answered n messages from member from.
func waitAnswers(t *testing.T, sent *sentMessages, from uint64, n int) {
	t.Helper()
	waitfor.Eventually(t, 5*time.Second, func() error {
		if got := len(sent.to(from)); got < n {
			return fmt.Errorf("raft answered %d messages from %x, want %d", got, from, n)
		}
		return nil
	})
}

// serveRaft starts a leading member with a recording transport and serves
// its Raft service on a loopback port; it returns the member, what it
// sends, and a client of its service.
func serveRaft(t *testing.T) (*Node, *sentMessages, api.RaftServiceClient) {
	t.Helper()
	n, sent, c, _ := serveRaftService(t)
	return n, sent, c
}

// serveRaftService is serveRaft that also returns the service served and
// its server.
func serveRaftService(t *testing.T) (*Node, *sentMessages, api.RaftServiceClient, served) {
	t.Helper()
	sent := &sentMessages{}
	n := newHarness(t).startConfig(Config{Applier: rafttest.NewKV(), Transport: sent})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	svc := NewService(n)
	api.RegisterRaftServiceServer(srv, svc)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return n, sent, api.NewRaftServiceClient(conn), served{svc, srv}
}

// served is a Service and the server serving it.
type served struct {
	svc *Service
	srv *grpc.Server
}

// streamChunks sends b over StreamRaftMessage in chunks of size.
func streamChunks(ctx context.Context, c api.RaftServiceClient, b []byte, size int) error {
	stream, err := c.StreamRaftMessage(ctx)
	if err != nil {
		return err
	}
	for len(b) > 0 {
		n := min(size, len(b))
		if err := stream.Send(&api.StreamRaftMessageRequest{Chunk: b[:n]}); err != nil {
			break // the server ended the stream; CloseAndRecv has its status
		}
		b = b[n:]
	}
	_, err = stream.CloseAndRecv()
	return err
}

// staleAppend is a MsgApp of about size bytes from a stranger at term 1,
// below the bootstrapped leader's term: raft answers it with a MsgAppResp
// to the sender, which shows the message reached raft intact.
func staleAppend(t *testing.T, from uint64, size int) []byte {
	t.Helper()
	m := raftpb.Message{Type: raftpb.MsgApp, From: from, Term: 1,
		Entries: []raftpb.Entry{{Term: 1, Index: 3, Data: bytes.Repeat([]byte{0xab}, size)}}}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStreamRaftMessageStepsLargeMessage(t *testing.T) {
	_, sent, c := serveRaft(t)
	const from = 0xfeed
	// Larger than gRPC's default 4 MiB limit for one message.
	b := staleAppend(t, from, 6<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := streamChunks(ctx, c, b, 1<<20); err != nil {
		t.Fatalf("stream %d bytes: %v", len(b), err)
	}
	waitAnswers(t, sent, from, 1)
	if got := sent.to(from)[0].Type; got != raftpb.MsgAppResp {
		t.Fatalf("answer to the streamed message is %v, want MsgAppResp", got)
	}
}

func TestStreamRaftMessageErrors(t *testing.T) {
	n, _, c := serveRaft(t)
	const removed = 0xdead
	n.members.remove(removed)
	defer func(old int) { maxStreamedMessage = old }(maxStreamedMessage)
	maxStreamedMessage = 2 << 20

	for _, tc := range []struct {
		name   string
		msg    []byte
		code   codes.Code
		reason string
	}{
		{"garbage", []byte{0xff, 0xff, 0xff}, codes.InvalidArgument, reason.InvalidSpec},
		{"too large", staleAppend(t, 0xbeef, 3<<20), codes.InvalidArgument, reason.InvalidSpec},
		{"removed sender", staleAppend(t, removed, 10), codes.PermissionDenied, reason.NodeRemoved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := streamChunks(ctx, c, tc.msg, 1<<20)
			if status.Code(err) != tc.code || reason.Of(err) != tc.reason {
				t.Fatalf("err = %v (reason %q), want %v with reason %q", err, reason.Of(err), tc.code, tc.reason)
			}
			// The unary call maps the same message to the same error
			// (except the size cap, which only the stream has).
			if tc.name == "too large" {
				return
			}
			_, err = c.ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{Messages: [][]byte{tc.msg}})
			if status.Code(err) != tc.code || reason.Of(err) != tc.reason {
				t.Fatalf("unary err = %v (reason %q), want %v with reason %q", err, reason.Of(err), tc.code, tc.reason)
			}
		})
	}
}

// Messages etcd's raft would panic on (taking the daemon down) or a
// snapshot that would stop the member for good are refused invalid_spec,
// and the member carries on.
func TestMessagesRaftCannotTakeAreRefused(t *testing.T) {
	n, _, c := serveRaft(t)
	to := n.raftID
	for _, tc := range []struct {
		name string
		msg  raftpb.Message
	}{
		{"unknown type", raftpb.Message{Type: raftpb.MessageType(-0x77bcbe8d), From: 2, To: to}},
		{"empty proposal", raftpb.Message{Type: raftpb.MsgProp, From: 2, To: to}},
		{"read request without its entry", raftpb.Message{Type: raftpb.MsgReadIndex, From: 2, To: to}},
		{"snapshot that does not decode", raftpb.Message{Type: raftpb.MsgSnap, From: 2, To: to, Term: 9,
			Snapshot: &raftpb.Snapshot{Data: []byte("not a snapshot"),
				Metadata: raftpb.SnapshotMetadata{Index: 50, Term: 9, ConfState: raftpb.ConfState{Voters: []uint64{to, 2}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.msg.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = c.ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{Messages: [][]byte{b}})
			if status.Code(err) != codes.InvalidArgument || reason.Of(err) != reason.InvalidSpec {
				t.Fatalf("err = %v (reason %q), want invalid_spec", err, reason.Of(err))
			}
			if err := n.Propose(ctx, rafttest.Put("after-"+tc.name, "v")); err != nil {
				t.Fatalf("the member no longer commits: %v", err)
			}
		})
	}
}

// TestHeartbeatWithoutATermIsRefused: raft takes a message without a term
// as a local one and skips its term checks, so a peer's heartbeat without
// one, counting on entries the follower lacks, panicked raft (tocommit out
// of range) and took the daemon down. It is refused invalid_spec and the
// member runs on.
func TestHeartbeatWithoutATermIsRefused(t *testing.T) {
	n, _, c := serveRaft(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	step := func(m raftpb.Message) error {
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{Messages: [][]byte{b}})
		return err
	}
	// A peer with a later term makes the member its follower.
	if err := step(raftpb.Message{Type: raftpb.MsgHeartbeat, From: 2, To: n.raftID, Term: 9}); err != nil {
		t.Fatalf("heartbeat of a later term: %v", err)
	}
	err := step(raftpb.Message{Type: raftpb.MsgHeartbeat, From: 2, To: n.raftID, Commit: 49})
	if status.Code(err) != codes.InvalidArgument || reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("heartbeat without a term: err = %v (reason %q), want invalid_spec", err, reason.Of(err))
	}
	_ = n.Status() // served by raft's goroutine after the step: a panic there happens first
	select {
	case <-n.Done():
		t.Fatalf("the member stopped: %v", n.Err())
	default:
	}
}

// A snapshot refused before raft takes it (here: its sender was removed)
// leaves no decoding behind: a decoded store is several times its
// encoding, and nothing would install it.
func TestRefusedSnapshotKeepsNoDecoding(t *testing.T) {
	n, _, c := serveRaft(t)
	const removed = 0xdead
	n.members.remove(removed)
	data, err := proto.Marshal(&api.RaftSnapshot{Store: &api.StoreSnapshot{}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&raftpb.Message{Type: raftpb.MsgSnap, From: removed, To: n.raftID, Term: 9,
		Snapshot: &raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: 50, Term: 9,
			ConfState: raftpb.ConfState{Voters: []uint64{n.raftID, removed}}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{Messages: [][]byte{b}})
	if reason.Of(err) != reason.NodeRemoved {
		t.Fatalf("err = %v (reason %q), want node_removed", err, reason.Of(err))
	}
	if n.decoded.Load() != nil {
		t.Fatal("the refused snapshot's decoding is still kept")
	}
}
