package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/pace"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Defaults of the options.
const (
	DefaultBatchDelay = 50 * time.Millisecond
	// DefaultMessageInterval bounds how often a pending task whose reason
	// stays the same is rewritten for a new message.
	DefaultMessageInterval = time.Minute
)

const (
	// maxBatchEvents: a batch is decided as soon as this many events
	// arrived, before the batch delay is over, and takes no more.
	maxBatchEvents = 10000
	// retryDelay is the wait before a batch whose proposal failed (lost
	// leadership, a stopped raft node) is tried again.
	retryDelay = time.Second
)

// Scheduler assigns pending tasks to nodes; see the package documentation.
type Scheduler struct {
	st                  *store.Store
	log                 *slog.Logger
	now                 func() time.Time
	batchDelay          time.Duration
	messageInterval     time.Duration
	maxTasksPerProposal int
	maxProposalBytes    int
	observe             func(BatchStats)
	metrics             schedulerMetrics
}

// BatchStats describes one committed batch, for metrics and benchmarks.
type BatchStats struct {
	// Assigned and PendingWrites count the committed writes by kind.
	Assigned, PendingWrites int
	Proposals               int
	// Pending is how many tasks still wait after the batch.
	Pending int
	// Decide is the time spent choosing nodes; Commit the time spent in
	// proposals.
	Decide, Commit time.Duration
}

// Option configures a Scheduler.
type Option func(*Scheduler)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Scheduler) { s.log = l } }

// WithClock sets the clock that stamps status timestamps and times the
// message interval (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Scheduler) { s.now = now } }

// WithBatchDelay sets the least time between two batches (default 50 ms):
// a change after a quiet spell is decided at once, changes that come
// within the delay of a batch wait for the next one, together.
func WithBatchDelay(d time.Duration) Option { return func(s *Scheduler) { s.batchDelay = d } }

// WithMessageInterval sets how often a pending task is rewritten when only
// its message changed (default 1 min).
func WithMessageInterval(d time.Duration) Option {
	return func(s *Scheduler) { s.messageInterval = d }
}

// WithProposalLimits bounds one proposal by task count and encoded bytes
// (defaults 5 000 and 1 MiB). A single task larger than maxBytes still
// goes, alone.
func WithProposalLimits(maxTasks, maxBytes int) Option {
	return func(s *Scheduler) { s.maxTasksPerProposal, s.maxProposalBytes = maxTasks, maxBytes }
}

// WithBatchObserver calls fn (on the scheduler's goroutine; it must be
// quick) after every batch whose writes were all committed.
func WithBatchObserver(fn func(BatchStats)) Option { return func(s *Scheduler) { s.observe = fn } }

// New returns a scheduler that reads and writes st. It does nothing until
// Run.
func New(st *store.Store, opts ...Option) *Scheduler {
	s := &Scheduler{
		st:                  st,
		log:                 slog.Default(),
		now:                 time.Now,
		batchDelay:          DefaultBatchDelay,
		messageInterval:     DefaultMessageInterval,
		maxTasksPerProposal: DefaultMaxTasksPerProposal,
		maxProposalBytes:    DefaultMaxProposalBytes,
		metrics:             newSchedulerMetrics(),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Run schedules until ctx is done: a first pass over everything pending in
// the store, then batches driven by store events. It builds its index
// afresh each time, so the leader runner may call it once per term; calls
// must not overlap.
func (s *Scheduler) Run(ctx context.Context) {
	ix := newIndex()
	events := s.st.ViewAndWatch(ctx, ix.load, store.Any(
		store.ObjectType[*api.Node](), store.ObjectType[*api.Service](), store.ObjectType[*api.Task](),
		store.ObjectType[*api.Volume]()))
	timer := time.NewTimer(0) // the first pass
	defer timer.Stop()
	armed, seen := true, 0
	arm := func(d time.Duration) {
		if !armed {
			timer.Reset(d)
			armed = true
		}
	}
	// A change after a quiet spell is decided at once; while changes keep
	// coming, at most one batch per batch delay (internal/pace).
	pacer := pace.New(s.batchDelay)
	take := func(e store.Event) {
		if e.Kind == store.EventReset {
			ix = newIndex()
			s.st.View(ix.load)
		} else {
			ix.apply(e)
		}
		seen++
	}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			take(e)
			if seen < maxBatchEvents {
				if ix.recheckAll || len(ix.fresh) > 0 {
					arm(pacer.Delay())
				}
				continue
			}
			// Since Go 1.23 a stopped timer delivers no stale tick.
			timer.Stop()
			armed = false
		case <-timer.C:
			armed = false
		}
		// What is queued already (the rest of the commit that woke an idle
		// scheduler) goes in this batch.
		for drained := false; !drained && seen < maxBatchEvents; {
			select {
			case e, ok := <-events:
				if !ok {
					return
				}
				take(e)
			default:
				drained = true
			}
		}
		seen = 0
		proposals, ok := s.batch(ctx, ix)
		if proposals > 0 { // a batch that wrote nothing starts no window
			pacer.Acted()
		}
		if !ok {
			arm(retryDelay)
		} else if len(ix.fresh) > 0 {
			arm(pacer.Delay()) // tasks read again after a conflict
		}
	}
}

// batch decides and commits one batch and returns how many proposals it
// made. It reports false when a proposal failed and the batch must be
// tried again.
func (s *Scheduler) batch(ctx context.Context, ix *index) (int, bool) {
	if !ix.recheckAll && len(ix.fresh) == 0 {
		return 0, true
	}
	start := time.Now()
	writes := s.decide(ix)
	stats := BatchStats{Decide: time.Since(start)}
	proposals, err := s.commit(ctx, ix, writes)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("scheduler: commit failed; retrying", "err", err, "retry_in", retryDelay)
		}
		return proposals, false
	}
	// Writes undone after a conflict are pending again with their old
	// status and do not count.
	for _, w := range writes {
		if w.task.GetStatus().GetState() == api.TaskState_TASK_STATE_ASSIGNED {
			stats.Assigned++
		} else if w.task.GetStatus() != w.oldStatus {
			stats.PendingWrites++
		}
	}
	stats.Proposals, stats.Pending = proposals, len(ix.pending)
	stats.Commit = time.Since(start) - stats.Decide
	s.log.Debug("scheduler: batch committed", "assigned", stats.Assigned, "pending_writes", stats.PendingWrites,
		"proposals", stats.Proposals, "pending", stats.Pending, "decide", stats.Decide, "commit", stats.Commit)
	s.metrics.record(stats)
	if s.observe != nil {
		s.observe(stats)
	}
	return proposals, true
}
