package manager

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// TestLeaderRunnerStartsAfterBarrierAndStops: a leader's subsystems start
// once the store holds everything committed before (the bootstrap entry),
// and are cancelled and waited for when the runner stops.
func TestLeaderRunnerStartsAfterBarrierAndStops(t *testing.T) {
	m, _, _ := openTestManager(t)
	started := make(chan bool, 1)
	stopped := make(chan struct{})
	r := newLeaderRunner(m.raft, m.log, []Subsystem{{Name: "probe", Run: func(ctx context.Context) {
		var svc *api.Service
		m.store.View(func(tx store.ReadTx) { svc = tx.GetService("bench-service") })
		started <- svc != nil
		<-ctx.Done()
		close(stopped)
	}}})
	go r.loop()
	select {
	case sawState := <-started:
		if !sawState {
			t.Fatal("subsystem started before the store held the committed state")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subsystem not started on the leader")
	}
	r.stop()
	<-r.done
	select {
	case <-stopped:
	default:
		t.Fatal("runner returned before its subsystem stopped")
	}
}

// stuckBarrier leads, and its barrier never applies: a leader whose
// quorum is gone, until raft notices.
type stuckBarrier struct{ done chan struct{} }

func (stuckBarrier) RaftID() uint64                    { return 1 }
func (stuckBarrier) Leader() (uint64, <-chan struct{}) { return 1, nil }
func (stuckBarrier) Barrier(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
func (b stuckBarrier) Done() <-chan struct{} { return b.done }

// A runner stopped while its new term's barrier waits returns at once:
// the manager's stop waits for it.
func TestLeaderRunnerStopsDuringItsBarrier(t *testing.T) {
	r := newLeaderRunner(stuckBarrier{done: make(chan struct{})}, slog.New(slog.DiscardHandler), nil)
	go r.loop()
	r.stop()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the runner did not return within 10 s of its stop, its barrier still waiting")
	}
}
