package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jaco-project/jaco/agent/db"
	"github.com/jaco-project/jaco/agent/monitor"
	"github.com/jaco-project/jaco/api"
)

// Agent runs this node's replicas for the cluster.
type Agent struct {
	cfg      Config
	log      *slog.Logger
	statuses *Statuses
	sessions *Sessions
	metrics  *agentMetrics
	// monitors heartbeats to the nodes the dispatcher named, session or
	// not (docs/adr/0042).
	monitors *monitor.Pinger
	started  atomic.Bool
	// inSession is true while a dispatcher session is open.
	inSession atomic.Bool

	// Set by Run (worker under mu: Replicas reads it).
	db     *db.DB
	worker *worker

	mu       sync.Mutex
	managers []string // rotation order
	saved    []string // as kept in the db
	next     int
	// reportMove sends a volume copy's report through the session running
	// now (nil between sessions).
	reportMove func(ctx context.Context, r *api.ReportVolumeMoveRequest) error
}

// New checks cfg and makes the agent's directories; Run does the rest.
func New(cfg Config) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.fillDefaults()
	for _, dir := range []string{cfg.Dir, cfg.replicasDir(), cfg.logsDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("make agent dir: %w", err)
		}
	}
	log := cfg.Logger.With("component", "agent")
	a := &Agent{
		cfg:      cfg,
		log:      log,
		statuses: NewStatuses(),
		metrics:  newAgentMetrics(),
		monitors: monitor.NewPinger(monitor.Dial(cfg.Dial), log.With("part", "monitor")),
	}
	a.sessions = a.newSessions()
	return a, nil
}

// Replicas are the replicas this agent runs (or has yet to stop or
// remove), with its own latest status; none before Run has loaded them.
func (a *Agent) Replicas() []*api.Task {
	a.mu.Lock()
	w := a.worker
	a.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.replicas()
}

// InSession reports whether the agent holds a session with the leader's
// dispatcher now (node readiness for a worker).
func (a *Agent) InSession() bool { return a.inSession.Load() }

// Run opens the agent db, re-adopts the replicas it lists, and keeps a
// session with the dispatcher until ctx ends. It returns after its
// goroutines have stopped; replicas keep running (a later Run, or a new
// process over the same Dir, adopts them). Run may be called once.
func (a *Agent) Run(ctx context.Context) error {
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("agent: Run called twice")
	}
	d, err := db.Open(a.cfg.dbPath())
	if err != nil {
		return err
	}
	defer d.Close()
	a.db = d

	stored, err := d.Managers()
	if err != nil {
		return err
	}
	a.saved = stored
	a.managers = mergeManagers(stored, a.cfg.Managers)

	ctx, cancel := context.WithCancel(ctx)
	w := newWorker(ctx, &a.cfg, d, a.statuses, a.metrics)
	a.mu.Lock() // Replicas reads it from other goroutines
	a.worker = w
	a.mu.Unlock()
	defer a.worker.wait()
	defer cancel()
	if err := a.worker.load(); err != nil {
		return fmt.Errorf("load replicas from agent db: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.monitors.Run(ctx) })
	a.sessions.Run(ctx)
	cancel()
	wg.Wait()
	return nil
}

// mergeManagers lists the stored addresses first (the cluster's latest
// word), then configured ones not among them.
func mergeManagers(stored, configured []string) []string {
	out := slices.Clone(stored)
	for _, addr := range configured {
		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	return out
}
