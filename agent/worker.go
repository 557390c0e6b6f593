package agent

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/jaco-project/jaco/agent/db"
	"github.com/jaco-project/jaco/agent/logs"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/spectemplate"
)

// worker keeps one runner per replica assigned to this node.
type worker struct {
	cfg      *Config
	log      *slog.Logger
	db       *db.DB
	statuses *Statuses
	metrics  *agentMetrics
	// logs keeps replicas' output, past their end (docs/design.md §9).
	logs *logs.Store
	// ctx is the agent's run context; runners end with it.
	ctx context.Context
	// node is this node as templates in specs see it (.Node).
	node spectemplate.Node

	// starts bounds the replicas preparing or starting at once.
	starts chan struct{}

	// heard closes when the first assignments came (awaitFiles).
	heard     chan struct{}
	heardOnce sync.Once

	mu      sync.Mutex
	runners map[string]*taskRunner
	// files are the secrets and configs of the runners' replicas.
	files fileStore
	wg    sync.WaitGroup
}

func newWorker(ctx context.Context, cfg *Config, d *db.DB, statuses *Statuses, m *agentMetrics) *worker {
	store := logs.NewStore(cfg.logsDir())
	store.Logger = cfg.Logger
	return &worker{cfg: cfg, log: cfg.Logger, db: d, statuses: statuses, metrics: m, ctx: ctx, logs: store,
		starts: make(chan struct{}, cfg.MaxConcurrentStarts), runners: map[string]*taskRunner{},
		files: newFileStore(), heard: make(chan struct{}), node: templateNode(cfg)}
}

// templateNode is this node for the templates of the specs it runs: its
// id, its name in the cluster as .Node.Hostname (what `jaco node ls`
// shows; the machine's hostname unless the node was named otherwise),
// and the platform as a Docker engine reports it (Architecture x86_64,
// not amd64).
func templateNode(cfg *Config) spectemplate.Node {
	host := cfg.NodeName
	if host == "" {
		host, _ = os.Hostname()
	}
	return spectemplate.Node{ID: cfg.NodeID, Hostname: host, Platform: spectemplate.HostPlatform()}
}

// load starts runners for the tasks the db holds (an agent restart): they
// re-adopt running replicas before any manager is reachable.
func (w *worker) load() error {
	tasks, err := w.db.Tasks()
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range tasks {
		// Each is in the db as it is: nothing to write back.
		w.startLocked(t, false)
	}
	return nil
}

// apply carries out an assignments message: the secrets and configs it
// carries are kept (in memory) before its replicas start, and those no
// replica names any more are forgotten once it is applied.
func (w *worker) apply(m *api.AssignmentsMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.heardOnce.Do(func() { close(w.heard) })
	defer w.forgetUnusedFilesLocked()
	w.files.add(m)
	if m.GetType() == api.AssignmentsMessage_TYPE_COMPLETE {
		keep := make(map[string]bool, len(m.GetUpdated()))
		for _, t := range m.GetUpdated() {
			keep[t.GetId()] = true
		}
		for id, r := range w.runners {
			if !keep[id] {
				r.remove()
			}
		}
	}
	for _, t := range m.GetUpdated() {
		if r, ok := w.runners[t.GetId()]; ok {
			r.update(t)
			continue
		}
		// A task new to this agent starts from the status its manager
		// knows, so a replica the cluster saw running is adopted rather
		// than prepared again.
		w.startLocked(t, true)
	}
	for _, id := range m.GetRemoved() {
		if r, ok := w.runners[id]; ok {
			r.remove()
		}
	}
}

// startLocked starts a runner for t from the status t carries; persist
// says t must be written to the db first.
func (w *worker) startLocked(t *api.Task, persist bool) {
	r := newTaskRunner(w, t)
	w.runners[t.GetId()] = r
	if persist {
		if err := r.persist(); err != nil {
			w.log.Error("keep task in agent db", "task_id", t.GetId(), "err", err)
		}
	}
	w.wg.Add(1)
	go r.run(w.ctx)
}

// forget drops r once its replica is removed.
func (w *worker) forget(r *taskRunner) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runners[r.id] == r {
		delete(w.runners, r.id)
	}
	w.forgetUnusedFilesLocked()
}

// wait returns when every runner has returned (after ctx ends).
func (w *worker) wait() { w.wg.Wait() }

// states counts the replicas by the state replicas would show them in.
func (w *worker) states() map[api.TaskState]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[api.TaskState]int{}
	for _, r := range w.runners {
		out[r.viewState()]++
	}
	return out
}

// replicas are the tasks of every runner, by service and slot.
func (w *worker) replicas() []*api.Task {
	w.mu.Lock()
	out := make([]*api.Task, 0, len(w.runners))
	for _, r := range w.runners {
		out = append(out, r.view())
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b *api.Task) int {
		return cmp.Or(cmp.Compare(a.GetServiceName(), b.GetServiceName()), cmp.Compare(a.GetSlot(), b.GetSlot()), cmp.Compare(a.GetId(), b.GetId()))
	})
	return out
}
