package dispatcher

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Heartbeats and batching.
const (
	DefaultHeartbeatPeriod = 5 * time.Second
	// graceMultiplier is how many periods a node may stay silent before
	// it is marked DOWN.
	graceMultiplier = 3
	// defaultBatchWindow is how long writes and assignment changes are
	// gathered before one commit or one message.
	defaultBatchWindow = 50 * time.Millisecond
)

// Option configures a Server.
type Option func(*config)

type config struct {
	log      *slog.Logger
	now      func() time.Time
	period   time.Duration
	managers func() []string
	dialNode NodeDialer
	// sweepEvery is how often expired nodes are looked for.
	sweepEvery time.Duration
	// batchWindow: see defaultBatchWindow.
	batchWindow time.Duration
	// volumeMoveReports: see WithVolumeMoveReports.
	volumeMoveReports VolumeMoveReports
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithClock sets the source of the current time used for heartbeat
// deadlines and status timestamps (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithHeartbeatPeriod sets the period agents heartbeat at (default 5 s).
func WithHeartbeatPeriod(d time.Duration) Option { return func(c *config) { c.period = d } }

// WithManagers sets the function that lists the managers' advertise
// addresses, sent to agents in SessionMessage.managers. It is called at
// the start of Run and at every expiry sweep (at most once a second), so
// it must be cheap.
func WithManagers(f func() []string) Option { return func(c *config) { c.managers = f } }

// Server implements api.DispatcherServiceServer. See the package
// documentation.
type Server struct {
	api.UnimplementedDispatcherServiceServer
	st      *store.Store
	cfg     config
	metrics dispatcherMetrics

	// mu guards term and everything of a term marked "guarded by
	// Server.mu". Batchers take their own lock inside mu, never the other
	// way round.
	mu   sync.Mutex
	term *term // nil outside Run
}

var _ api.DispatcherServiceServer = (*Server)(nil)

// New returns a dispatcher over st. It serves calls only while Run runs.
func New(st *store.Store, opts ...Option) *Server {
	cfg := config{
		log:         slog.Default(),
		now:         time.Now,
		period:      DefaultHeartbeatPeriod,
		managers:    func() []string { return nil },
		batchWindow: defaultBatchWindow,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.period <= 0 {
		cfg.period = DefaultHeartbeatPeriod
	}
	// Sweeping often keeps DOWN close to the grace period's end; a few
	// thousand map entries per sweep cost little.
	cfg.sweepEvery = max(min(cfg.period/10, time.Second), 10*time.Millisecond)
	return &Server{st: st, cfg: cfg, metrics: newDispatcherMetrics()}
}

// grace is how long a node may stay silent before it is marked DOWN.
func (s *Server) grace() time.Duration {
	return graceMultiplier * s.cfg.period
}

// term is the dispatcher's state for one run as leader.
type term struct {
	ctx context.Context // done when Run ends

	sessions map[string]*session // by node id; guarded by Server.mu
	expiry   *expiry             // guarded by Server.mu
	managers []string            // guarded by Server.mu
	peers    *overlayPeers       // guarded by Server.mu
	monitors *monitorRing        // guarded by Server.mu
	// endpoints: services' endpoints per network; guarded by Server.mu.
	endpoints *endpointTable

	nodes    *batcher[nodeChange]
	statuses *batcher[statusChange]
	// tasks routes task events to the nodes' Assignments streams.
	tasks *taskHub
}

// errNoLeader is every call's answer outside Run.
func errNoLeader() error {
	return reason.Error(codes.Unavailable, reason.NoLeader,
		"the dispatcher runs on the leader only and this manager does not lead now: reconnect through any manager")
}

func errStaleSession(id string) error {
	return reason.Error(codes.NotFound, reason.NotFound,
		"session %q is not this node's current session: open a new session", id)
}

func errNodeRemoved(nodeID string) error {
	return reason.Error(codes.PermissionDenied, reason.NodeRemoved,
		"node %s is not a member of the cluster", nodeID)
}

// caller returns the calling node's id.
func caller(ctx context.Context) (string, error) {
	id, ok := identity.FromContext(ctx)
	if !ok || id.Kind != identity.Node || id.NodeID == "" {
		return "", reason.Error(codes.PermissionDenied, reason.PermissionDenied,
			"the dispatcher serves nodes only (caller: %v)", id)
	}
	return id.NodeID, nil
}

// current returns the running term.
func (s *Server) current() (*term, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term == nil {
		return nil, errNoLeader()
	}
	return s.term, nil
}

// session returns the running term and the caller's session named id.
func (s *Server) session(ctx context.Context, id string) (*term, *session, error) {
	nodeID, err := caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term == nil {
		return nil, nil, errNoLeader()
	}
	sess := s.term.sessions[nodeID]
	if sess == nil || sess.id != id {
		return nil, nil, errStaleSession(id)
	}
	return s.term, sess, nil
}

// Run serves the dispatcher until ctx ends (leadership lost), then ends
// every session with no_leader. It is meant to run as a leader subsystem;
// a second concurrent Run returns at once.
func (s *Server) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := &term{
		ctx:       ctx,
		sessions:  map[string]*session{},
		expiry:    newExpiry(),
		managers:  s.cfg.managers(),
		peers:     newOverlayPeers(),
		monitors:  newMonitorRing(),
		endpoints: newEndpointTable(),
		nodes:     newBatcher(s.cfg.batchWindow, laterNodeChange, s.writeNodes, nil),
		statuses:  newBatcher(s.cfg.batchWindow, furtherStatus, s.writeStatuses, settles),
		tasks:     newTaskHub(),
	}
	// The hub watches before any stream subscribes (see taskHub.run).
	taskEvents := s.st.Watch(ctx, store.ObjectType[*api.Task]())
	s.mu.Lock()
	if s.term != nil {
		s.mu.Unlock()
		s.cfg.log.Error("dispatcher: Run called while already running")
		return
	}
	s.term = t
	s.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { t.nodes.run(ctx) })
	wg.Go(func() { t.statuses.run(ctx) })
	wg.Go(func() { t.tasks.run(taskEvents) })
	var returning int
	var startGrace time.Duration
	nodeEvents := s.st.ViewAndWatch(ctx, func(tx store.ReadTx) {
		s.mu.Lock()
		defer s.mu.Unlock()
		nodes := tx.ListNodes()
		returning, startGrace = s.trackAll(t, nodes)
		t.peers.reset(nodes)
		t.monitors.reset(nodes)
	}, store.ObjectType[*api.Node]())
	wg.Go(func() { s.watchNodes(t, nodeEvents) })
	endpointEvents := s.st.ViewAndWatch(ctx, func(tx store.ReadTx) {
		s.mu.Lock()
		defer s.mu.Unlock()
		readEndpoints(t, tx)
	}, endpointEvent)
	wg.Go(func() { s.watchEndpoints(t, endpointEvents) })
	wg.Go(func() { s.sweep(t) })
	wg.Go(func() { s.rejudge(t) })
	s.cfg.log.Info("dispatcher started", "heartbeat_period", s.cfg.period, "grace", s.grace(),
		"nodes_to_return", returning, "their_grace", startGrace)

	<-ctx.Done()
	s.mu.Lock()
	s.term = nil
	for id, sess := range t.sessions {
		sess.end(errNoLeader())
		delete(t.sessions, id)
	}
	s.mu.Unlock()
	wg.Wait()
	s.cfg.log.Info("dispatcher stopped")
}
