package manager

import (
	"context"
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
	r := &leaderRunner{
		raft: m.raft,
		log:  m.log,
		subsystems: []Subsystem{{Name: "probe", Run: func(ctx context.Context) {
			var svc *api.Service
			m.store.View(func(tx store.ReadTx) { svc = tx.GetService("bench-service") })
			started <- svc != nil
			<-ctx.Done()
			close(stopped)
		}}},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go r.loop()
	select {
	case sawState := <-started:
		if !sawState {
			t.Fatal("subsystem started before the store held the committed state")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subsystem not started on the leader")
	}
	close(r.stop)
	<-r.done
	select {
	case <-stopped:
	default:
		t.Fatal("runner returned before its subsystem stopped")
	}
}
