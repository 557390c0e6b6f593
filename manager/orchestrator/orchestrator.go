package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Option configures an Orchestrator.
type Option func(*Orchestrator)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *Orchestrator) { o.log = l } }

// WithClock sets the clock for task timestamps, not_before and restart
// windows (default time.Now), as the scheduler and dispatcher take theirs.
func WithClock(now func() time.Time) Option { return func(o *Orchestrator) { o.now = now } }

// WithBatchSize sets about how many task writes go into one proposal, and
// how many of one service's missing tasks a pass creates at least
// (default 500).
func WithBatchSize(n int) Option { return func(o *Orchestrator) { o.batch = max(n, 1) } }

// Orchestrator runs the replicated and global reconcilers, the restart
// supervisor and node-down handling on the leader. See the package
// documentation for what it guarantees.
type Orchestrator struct {
	st      *store.Store
	log     *slog.Logger
	now     func() time.Time
	batch   int
	remover NodeRemover
	metrics orchestratorMetrics
}

// retryDelay is how long to wait after a failed write before trying again.
const retryDelay = 200 * time.Millisecond

// New returns an orchestrator working on st.
func New(st *store.Store, opts ...Option) *Orchestrator {
	o := &Orchestrator{st: st, log: slog.Default(), now: time.Now, batch: 500, metrics: newOrchestratorMetrics()}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Run reconciles every service from the store's content, then follows the
// store's changes until ctx is done; beside it run the drain machine's
// bookkeeping (see drainer) and the rebalance on a node's joining
// (rebalanceOnJoin). It runs while this manager leads and may be
// run again, one Run at a time, for the next term.
func (o *Orchestrator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watches and the drainer
	dr := o.newDrainer()
	wg.Add(2)
	go func() {
		defer wg.Done()
		dr.run(ctx)
	}()
	go func() {
		defer wg.Done()
		o.rebalanceOnJoin(ctx)
	}()
	d := newDirty()
	in := newIntake(true)
	// The channel carries only resets; in.kick says the store changed.
	events := o.st.ViewAndWatch(ctx, d.all, store.Any(
		store.ObjectType[*api.Service](), store.ObjectType[*api.Task](), store.ObjectType[*api.Node]()),
		decisive, in.filter)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var retry, wake <-chan time.Time
		if !takeBurst(events, d.note) {
			return
		}
		in.take(d)
		err := o.reconcile(ctx, d)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			o.log.Warn("orchestrator write failed; retrying", "err", err, "services", len(d.services))
			retry = time.After(retryDelay)
		case len(d.services) > 0:
			// The pass left work to the next: go on at once, with
			// whatever else has arrived.
			continue
		}
		if at, ok := d.next(); ok {
			timer.Reset(max(at.Sub(o.now()), 0))
			wake = timer.C
		}
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			d.note(e)
		case <-in.kick:
		case <-retry:
		case <-wake:
		case <-ctx.Done():
			return
		}
		timer.Stop()
		d.due(o.now())
	}
}

// takeBurst passes note whatever has arrived on events. It reports false
// when events is closed.
func takeBurst(events <-chan store.Event, note func(store.Event)) bool {
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return false
			}
			note(e)
		default:
			return true
		}
	}
}

// maxConflicts is how often a plan is worked out again at once after
// another writer got in first, before backing off.
const maxConflicts = 10

// errPlanned ends the planning transaction without proposing it.
var errPlanned = errors.New("planned")

// reconcile works out what the dirty services need from one consistent
// read, then proposes it in batches of about o.batch writes, checking ctx
// before each. A batch refused for a version conflict (the scheduler or
// the dispatcher wrote a task meanwhile) makes it read and plan again; the
// batches already committed stand, as every decision is taken afresh from
// the store. A pass plans a share of a big change (see pass.share): the
// services it left work to stay in d for the next.
func (o *Orchestrator) reconcile(ctx context.Context, d *dirty) error {
	o.st.View(d.resolve)
	ids := slices.Sorted(maps.Keys(d.services))
	if len(ids) == 0 {
		return nil
	}
	for conflicts := 0; ; conflicts++ {
		var pl plan
		var more map[string]bool
		var wake map[string]time.Time
		err := o.st.Update(ctx, func(tx *store.Tx) error {
			p := newPass(tx, o.now(), o.batch)
			for _, id := range ids {
				if err := p.reconcileService(id); err != nil {
					return fmt.Errorf("service %s: %w", id, err)
				}
			}
			pl, more, wake = p.plan, p.more, p.wake
			return errPlanned
		})
		if !errors.Is(err, errPlanned) {
			return err
		}
		err = nil
		batches := pl.batches(o.batch)
		if len(batches) > 0 {
			o.log.Debug("orchestrator pass", "services", len(ids), "batches", len(batches))
		}
		for _, b := range batches {
			// A proposer need not look at ctx before taking a batch.
			if err = ctx.Err(); err != nil {
				break
			}
			if err = commit(ctx, o.st, b); err != nil {
				break
			}
			o.metrics.committed(b)
		}
		if errors.Is(err, store.ErrVersionConflict) && conflicts < maxConflicts {
			continue
		}
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !more[id] {
				delete(d.services, id)
			}
		}
		for id, t := range wake {
			d.wakeAt(id, t)
		}
		return nil
	}
}
