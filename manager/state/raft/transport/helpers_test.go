package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/grpcflow"
)

// fakeServer is a RaftService that records the messages it receives.
type fakeServer struct {
	api.UnimplementedRaftServiceServer

	mu       sync.Mutex
	msgs     []raftpb.Message
	streamed int // messages that came over StreamRaftMessage
	attempts int // calls, and batches on a RaftMessages stream, refused or not
	streams  int // RaftMessages streams opened
	resolves int // ResolveAddress calls
	addrs    map[uint64]string
	// block, when set, holds every call until it is closed.
	block chan struct{}
	// refuse, when set, is returned for every message.
	refuse error
}

func (s *fakeServer) hold(ctx context.Context) error {
	s.mu.Lock()
	s.attempts++
	block, refuse := s.block, s.refuse
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return refuse
}

func (s *fakeServer) record(b []byte, streamed bool) error {
	var m raftpb.Message
	if err := m.Unmarshal(b); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	if streamed {
		s.streamed++
	}
	return nil
}

// batch holds one call's or stream message's batch as hold says, then
// records it.
func (s *fakeServer) batch(ctx context.Context, msgs [][]byte) error {
	if err := s.hold(ctx); err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.record(m, false); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeServer) ProcessRaftMessage(ctx context.Context, req *api.ProcessRaftMessageRequest) (*api.ProcessRaftMessageResponse, error) {
	if err := s.batch(ctx, req.Messages); err != nil {
		return nil, err
	}
	return &api.ProcessRaftMessageResponse{}, nil
}

func (s *fakeServer) RaftMessages(stream api.RaftService_RaftMessagesServer) error {
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&api.ProcessRaftMessageResponse{})
		}
		if err != nil {
			return err
		}
		if err := s.batch(stream.Context(), req.Messages); err != nil {
			return err
		}
	}
}

func (s *fakeServer) StreamRaftMessage(stream api.RaftService_StreamRaftMessageServer) error {
	var buf []byte
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		buf = append(buf, req.Chunk...)
		if err := s.hold(stream.Context()); err != nil {
			return err
		}
	}
	if err := s.record(buf, true); err != nil {
		return err
	}
	return stream.SendAndClose(&api.StreamRaftMessageResponse{})
}

func (s *fakeServer) ResolveAddress(_ context.Context, req *api.ResolveAddressRequest) (*api.ResolveAddressResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolves++
	addr, ok := s.addrs[req.RaftId]
	if !ok {
		return nil, fmt.Errorf("raft id %x not known", req.RaftId)
	}
	return &api.ResolveAddressResponse{Address: addr}, nil
}

func (s *fakeServer) received() []raftpb.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]raftpb.Message(nil), s.msgs...)
}

func (s *fakeServer) streamsOpened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}

func (s *fakeServer) counts() (attempts, streamed, resolves int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, s.streamed, s.resolves
}

// serve serves s on addr ("127.0.0.1:0" for any port) until the test
// ends or the returned stop is called; it returns the address.
func serve(t *testing.T, addr string, s api.RaftServiceServer, opts ...grpc.ServerOption) (string, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	api.RegisterRaftServiceServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(lis)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Stop()
			<-done
		})
	}
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

type snapReport struct {
	id     uint64
	status raft.SnapshotStatus
}

// reporter is a Raft that records what it is told.
type reporter struct {
	mu          sync.Mutex
	unreachable map[uint64]int
	snaps       []snapReport
}

func newReporter() *reporter { return &reporter{unreachable: map[uint64]int{}} }

func (r *reporter) ReportUnreachable(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unreachable[id]++
}

func (r *reporter) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, snapReport{id, status})
}

func (r *reporter) unreachableCount(id uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable[id]
}

func (r *reporter) snapshots() []snapReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]snapReport(nil), r.snaps...)
}

// newTransport starts a transport reporting to a new reporter, with
// insecure connections; cfg's zero fields get test-friendly values.
func newTransport(t *testing.T, cfg Config) (*Transport, *reporter) {
	t.Helper()
	r := newReporter()
	cfg.Raft = r
	cfg.Dial = plainDialer()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = time.Second
	}
	if cfg.ResolveInterval == 0 {
		cfg.ResolveInterval = 100 * time.Millisecond
	}
	tr := New(cfg)
	t.Cleanup(tr.Stop)
	return tr, r
}

func app(to, index uint64) raftpb.Message {
	return raftpb.Message{Type: raftpb.MsgApp, From: 1, To: to, Term: 1, Index: index}
}

func mustAdd(t *testing.T, tr *Transport, id uint64, addr string) {
	t.Helper()
	if err := tr.AddPeer(id, addr); err != nil {
		t.Fatalf("AddPeer(%x, %s): %v", id, addr, err)
	}
}

// plainDialer connects lazily without TLS, with node.dialPeer's
// flow-control windows and reconnection pace, so a restarted member hears
// from the leader within the tests' deadlines.
func plainDialer() Dialer {
	opts := grpcflow.NodeDial(insecure.NewCredentials())
	return func(addr string) (*grpc.ClientConn, error) { return grpc.NewClient(addr, opts...) }
}
