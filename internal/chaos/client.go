package chaos

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/linearcheck"
)

// opTimeout bounds one client operation. A paused manager holds its
// clients' calls until then, and they end Unknown.
const opTimeout = 2 * time.Second

// worker is one client goroutine's state: its id in the history, the
// manager it talks to and its own random source (from the run's seed, so
// a run's choices replay).
type worker struct {
	id      int
	member  string
	conn    *grpc.ClientConn
	control api.ControlServiceClient
	rec     *linearcheck.Recorder
	acked   *atomic.Int64 // acknowledged writes, cluster-wide
	rng     *rand.Rand
	// think is the pause between operations: it keeps the history small
	// enough for the checker over a long run.
	think [2]time.Duration
}

// ready reports whether the connection to the manager is up. A call on a
// connection that is down would fail before anything was sent, yet the
// error could not tell that from a call cut off after sending, and the
// history would fill with Unknown writes the checker must try in every
// order. So a worker whose manager is down (killed, restarting) sends
// nothing, and records nothing, until the connection is back.
func (w *worker) ready(ctx context.Context) bool {
	if w.conn.GetState() == connectivity.Ready {
		return true
	}
	w.conn.Connect()
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	for s := w.conn.GetState(); s != connectivity.Ready; s = w.conn.GetState() {
		if !w.conn.WaitForStateChange(wctx, s) {
			return false
		}
	}
	return true
}

// pause waits the think time, or a longer back-off after an operation
// that did not succeed. It reports false once ctx ends.
func (w *worker) pause(ctx context.Context, failed bool) bool {
	lo, hi := w.think[0], w.think[1]
	if failed {
		lo, hi = 100*time.Millisecond, 300*time.Millisecond
	}
	d := lo
	if hi > lo {
		d += time.Duration(w.rng.Int64N(int64(hi - lo)))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// loop runs op until ctx ends, pausing between operations and while the
// manager is unreachable. op reports whether its operation succeeded.
func (w *worker) loop(ctx context.Context, op func(ctx context.Context) bool) {
	failed := false
	for w.pause(ctx, failed) {
		if !w.ready(ctx) {
			failed = true
			continue
		}
		// The operation gets its own deadline and is never cut short by
		// the end of the run: a call abandoned at the end would be
		// recorded Unknown for no fault of the cluster.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		failed = !op(octx)
		cancel()
	}
}
