package dispatcher

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/internal/testclock"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// identityMD is the metadata key the test interceptors read the caller's
// identity from (identity.Encode), standing in for the node's TLS checks.
const identityMD = "test-identity"

func withIdentity(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(identityMD); len(v) == 1 {
		id, err := identity.Decode(v[0])
		if err != nil {
			return nil, err
		}
		ctx = identity.NewContext(ctx, id)
	}
	return ctx, nil
}

type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s identityStream) Context() context.Context { return s.ctx }

// harness is a dispatcher behind an in-process gRPC server, over a store
// with a proposer.
type harness struct {
	t        *testing.T
	st       *store.Store
	prop     *storetest.Proposer
	clock    *testclock.Clock
	srv      *Server
	conn     *grpc.ClientConn
	managers atomic.Pointer[[]string]
	stopRun  context.CancelFunc
	runDone  chan struct{}
}

func newHarness(t *testing.T, nodes ...*api.Node) *harness {
	t.Helper()
	h := &harness{t: t, clock: testclock.New(time.Unix(1_000_000, 0))}
	h.st, h.prop = storetest.NewWithProposer(t)
	h.managers.Store(&[]string{"198.18.0.1:7000"})
	h.srv = New(h.st,
		WithClock(h.clock.Now),
		WithLogger(slog.New(slog.DiscardHandler)),
		WithManagers(func() []string { return *h.managers.Load() }),
	)
	h.srv.cfg.sweepEvery = 5 * time.Millisecond
	h.srv.cfg.batchWindow = 10 * time.Millisecond
	for _, n := range nodes {
		h.create(n)
	}

	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			ctx, err := withIdentity(ctx)
			if err != nil {
				return nil, err
			}
			return next(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			ctx, err := withIdentity(ss.Context())
			if err != nil {
				return err
			}
			return next(srv, identityStream{ss, ctx})
		}),
	)
	api.RegisterDispatcherServiceServer(gs, h.srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h.conn = conn
	return h
}

// run starts the dispatcher's Run; stop (also at cleanup) ends it and
// waits for it to return.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.stopRun, h.runDone = cancel, make(chan struct{})
	go func() {
		defer close(h.runDone)
		h.srv.Run(ctx)
	}()
	h.t.Cleanup(h.stop)
	h.eventually("Run started", func() (bool, string) {
		_, err := h.srv.current()
		return err == nil, fmt.Sprint(err)
	})
}

func (h *harness) stop() {
	h.stopRun()
	<-h.runDone
}

// client returns a dispatcher client whose calls carry id, and a context
// for them that ends with the test.
func (h *harness) client(id identity.Identity) (api.DispatcherServiceClient, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	return api.NewDispatcherServiceClient(h.conn), metadata.AppendToOutgoingContext(ctx, identityMD, id.Encode())
}

// ctxFor returns a context for calls made as node id.
func (h *harness) ctxFor(id string) context.Context {
	_, ctx := h.client(nodeID(id))
	return ctx
}

func nodeID(id string) identity.Identity {
	return identity.Identity{Kind: identity.Node, NodeID: id, Role: "worker"}
}

func (h *harness) create(objs ...store.Object) {
	h.t.Helper()
	storetest.Create(h.t, h.st, objs...)
}

// change reads task id, applies fn and writes it back.
func (h *harness) change(id string, fn func(*api.Task)) {
	h.t.Helper()
	if err := h.st.Update(context.Background(), func(tx *store.Tx) error {
		task := tx.GetTask(id)
		if task == nil {
			return fmt.Errorf("no task %s", id)
		}
		fn(task)
		return tx.Update(task)
	}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) node(id string) *api.Node {
	var n *api.Node
	h.st.View(func(tx store.ReadTx) { n = tx.GetNode(id) })
	return n
}

func (h *harness) task(id string) *api.Task {
	var t *api.Task
	h.st.View(func(tx store.ReadTx) { t = tx.GetTask(id) })
	return t
}

// eventually polls cond until it holds, failing with what it last saw after
// a deadline.
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not reached in 5s; last seen: %s", what, seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweep runs one expiry sweep now, as the sweeper does, and returns once
// whatever it marks DOWN is written: a negative check after it needs no
// sleep.
func (h *harness) sweep() {
	h.t.Helper()
	h.srv.mu.Lock()
	t := h.srv.term
	h.srv.mu.Unlock()
	if t == nil {
		h.t.Fatal("sweep: dispatcher not running")
	}
	h.srv.expire(t)
}

func (h *harness) nodeState(id string) (api.NodeStatusState, string) {
	n := h.node(id)
	return n.GetStatus().GetState(), n.GetStatus().GetMessage()
}

// recv receives one message with a deadline.
func recv[T any](t *testing.T, stream interface{ Recv() (T, error) }) (T, error) {
	t.Helper()
	type result struct {
		msg T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		m, err := stream.Recv()
		ch <- result{m, err}
	}()
	select {
	case r := <-ch:
		return r.msg, r.err
	case <-time.After(5 * time.Second):
		t.Fatal("no message in 5s")
	}
	var zero T
	return zero, nil
}

func workerNode(id string) *api.Node {
	return &api.Node{Id: id, Meta: &api.Meta{}, Hostname: "host-" + id, Role: api.NodeRole_NODE_ROLE_WORKER}
}

func task(id, nodeID string, desired, state api.TaskState) *api.Task {
	return &api.Task{Id: id, Meta: &api.Meta{}, ServiceId: "svc", NodeId: nodeID, DesiredState: desired,
		Status: &api.TaskStatus{State: state}, SpecVersion: 1}
}
