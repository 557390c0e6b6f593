package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/encryption"
	jraft "github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// nodeRef lets the transport report to a node created after it.
type nodeRef struct{ n *jraft.Node }

func (r *nodeRef) ReportUnreachable(id uint64) { r.n.ReportUnreachable(id) }
func (r *nodeRef) ReportSnapshot(id uint64, s raft.SnapshotStatus) {
	r.n.ReportSnapshot(id, s)
}

// member is one manager's raft member with its transport and a real
// Raft service on a loopback port.
type member struct {
	self     *api.RaftMember
	dir      string
	lis      net.Listener
	kv       *rafttest.KV
	node     *jraft.Node
	tr       *Transport
	streams  atomic.Int32 // StreamRaftMessage calls served
	resolves atomic.Int32 // ResolveAddress calls served
}

func newMember(t *testing.T, name string) *member {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	id, err := jraft.NewRaftID()
	if err != nil {
		t.Fatal(err)
	}
	return &member{
		self: &api.RaftMember{RaftId: id, NodeId: name, Address: lis.Addr().String()},
		dir:  filepath.Join(t.TempDir(), name),
		lis:  lis,
		kv:   rafttest.NewKV(),
	}
}

func (m *member) start(t *testing.T, sealer *encryption.Sealer) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	ref := &nodeRef{}
	m.tr = New(Config{Raft: ref, Dial: plainDialer(), Logger: logger, SendTimeout: time.Second})
	n, err := jraft.New(jraft.Config{
		StateDir:                   m.dir,
		Sealer:                     sealer,
		Applier:                    m.kv,
		Transport:                  m.tr,
		Logger:                     logger,
		TickInterval:               50 * time.Millisecond,
		SnapshotInterval:           5,
		LogEntriesForSlowFollowers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	ref.n, m.node = n, n
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if strings.HasSuffix(info.FullMethod, "/ResolveAddress") {
				m.resolves.Add(1)
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			m.streams.Add(1)
			return h(srv, ss)
		}),
	)
	api.RegisterRaftServiceServer(srv, jraft.NewService(n))
	go srv.Serve(m.lis)
	n.Start()
	t.Cleanup(func() {
		srv.Stop()
		n.Stop()
		m.tr.Stop()
	})
}

// writeOnLeader commits key=value through whichever member leads.
func writeOnLeader(t *testing.T, members []*member, key, value string) {
	t.Helper()
	action := &api.StoreAction{Kind: api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_Service{Service: &api.Service{Id: key, Spec: &api.ServiceSpec{Name: value}}}}
	waitfor.Holds(t, 15*time.Second, "write "+key, func() (bool, string) {
		for _, m := range members {
			if !m.node.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := m.node.Propose(ctx, []*api.StoreAction{action})
			if err == nil || !errors.Is(err, jraft.ErrNotLeader) && !errors.Is(err, jraft.ErrLostLeadership) {
				if err != nil {
					t.Fatalf("write %s: %v", key, err)
				}
				return true, ""
			}
			return false, err.Error()
		}
		return false, "no leader"
	})
}

func waitApplied(t *testing.T, m *member, key, value string) {
	t.Helper()
	waitfor.Holds(t, 15*time.Second, fmt.Sprintf("%s to apply %s", m.self.NodeId, key), func() (bool, string) {
		v, ok := m.kv.Get(key)
		return ok && v == value, "not applied"
	})
}

// TestThreeMembers forms a three-voter group whose members talk only
// through Transport and the real Raft service: the third joins knowing
// only the second member, so it must resolve the leader's address, and it
// catches up from a snapshot large enough to be streamed.
func TestThreeMembers(t *testing.T) {
	key, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := encryption.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := newMember(t, "a"), newMember(t, "b"), newMember(t, "c")
	if err := jraft.Bootstrap(a.dir, sealer, "cluster-1", a.self, &api.InternalRaftRequest{}); err != nil {
		t.Fatal(err)
	}
	// b joins knowing the leader, as a join answer tells it; c knows only
	// b, so the leader's address must come from ResolveAddress.
	if err := jraft.BootstrapJoin(b.dir, sealer, "cluster-1", b.self, []*api.RaftMember{a.self}); err != nil {
		t.Fatal(err)
	}
	if err := jraft.BootstrapJoin(c.dir, sealer, "cluster-1", c.self, []*api.RaftMember{b.self}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*member{a, b, c} {
		m.start(t, sealer)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.node.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}

	// 4 MiB of state, so the snapshot a joiner needs is streamed.
	big := strings.Repeat("x", 256<<10)
	for i := range 16 {
		writeOnLeader(t, []*member{a}, fmt.Sprintf("big-%02d", i), big)
	}

	if err := a.node.AddLearner(ctx, b.self); err != nil {
		t.Fatalf("add b: %v", err)
	}
	waitApplied(t, b, "big-15", big)
	if err := a.node.Promote(ctx, b.self.RaftId); err != nil {
		t.Fatalf("promote b: %v", err)
	}

	if err := a.node.AddLearner(ctx, c.self); err != nil {
		t.Fatalf("add c: %v", err)
	}
	// c can only catch up from a snapshot (the log before it is
	// compacted); the leader takes one that names c as soon as c is added,
	// since raft ignores a snapshot whose configuration lacks the receiver.
	waitApplied(t, c, "big-15", big)
	if err := a.node.Promote(ctx, c.self.RaftId); err != nil {
		t.Fatalf("promote c: %v", err)
	}
	if n := c.streams.Load(); n == 0 {
		t.Error("c caught up without a streamed snapshot")
	}
	if n := b.resolves.Load(); n == 0 {
		t.Error("c never asked b to resolve the leader's address")
	}
	if addr, ok := c.tr.PeerAddr(a.self.RaftId); !ok || addr != a.self.Address {
		t.Errorf("c's address for the leader = %q %v, want %s", addr, ok, a.self.Address)
	}

	all := []*member{a, b, c}
	for i := range 10 {
		writeOnLeader(t, all, fmt.Sprintf("k%d", i), "v")
	}
	for _, m := range all {
		waitApplied(t, m, "k9", "v")
		for _, o := range all {
			if !m.node.IsVoter(o.self.RaftId) {
				t.Errorf("%s does not see %s as a voter", m.self.NodeId, o.self.NodeId)
			}
		}
	}
}
