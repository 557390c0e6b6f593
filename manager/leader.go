package manager

import (
	"context"
	"log/slog"
	"sync"
)

// Subsystem is a leader-only part of the manager: Run runs while this
// member leads and returns, having stopped every goroutine it started,
// when ctx ends because it no longer does. Subsystems never call each
// other; they meet in the store.
type Subsystem struct {
	Name string
	Run  func(ctx context.Context)
}

// leadership is what the leader runner needs of the raft member.
type leadership interface {
	RaftID() uint64
	// Leader is the leader's raft id (0: none) and a channel closed at the
	// next change.
	Leader() (uint64, <-chan struct{})
	// Barrier returns once everything committed before it is applied.
	Barrier(ctx context.Context) error
	// Done is closed when the member stops.
	Done() <-chan struct{}
}

// leaderRunner starts the subsystems each time this member becomes leader
// and cancels them when it stops being leader.
type leaderRunner struct {
	raft       leadership
	log        *slog.Logger
	subsystems []Subsystem
	// running ends at stop: the loop returns, and with it a barrier it
	// waits on (which, on a leader cut off from its quorum, would last
	// an election timeout or more).
	running context.Context
	stop    context.CancelFunc
	done    chan struct{}

	// Owned by loop.
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newLeaderRunner(raft leadership, log *slog.Logger, subsystems []Subsystem) *leaderRunner {
	running, stop := context.WithCancel(context.Background())
	return &leaderRunner{raft: raft, log: log, subsystems: subsystems, running: running, stop: stop, done: make(chan struct{})}
}

func (r *leaderRunner) loop() {
	defer close(r.done)
	defer r.stopAll()
	for {
		lead, changed := r.raft.Leader()
		if lead == r.raft.RaftID() {
			if r.cancel == nil {
				r.startAll()
			}
		} else {
			r.stopAll()
		}
		select {
		case <-changed:
		case <-r.running.Done():
			return
		case <-r.raft.Done():
			return
		}
	}
}

func (r *leaderRunner) startAll() {
	ctx, cancel := context.WithCancel(r.running)
	// Subsystems decide from the store: first let it hold everything
	// committed before this term. Should leadership go meanwhile, the next
	// change of leader brings the loop back here.
	if err := r.raft.Barrier(ctx); err != nil {
		if r.running.Err() == nil {
			r.log.Warn("leader barrier", "err", err)
		}
		cancel()
		return
	}
	r.cancel = cancel
	names := make([]string, 0, len(r.subsystems))
	for _, s := range r.subsystems {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			s.Run(ctx)
		}()
		names = append(names, s.Name)
	}
	r.log.Info("leader subsystems started", "subsystems", names)
}

func (r *leaderRunner) stopAll() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
	r.cancel = nil
	r.log.Info("leader subsystems stopped")
}
