package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/backoff"
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
	return backoff.Sleep(ctx, d)
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

// startClients starts the workloads' clients on every member: per
// manager, registerClients register clients and one set client, each with
// a random source of its own from the seed. The returned stop ends them
// and waits; it may be called more than once.
func startClients(ctx context.Context, c *cluster, cfg Config, rec *linearcheck.Recorder, keys *registerKeys) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	id := 0
	for i, m := range c.members {
		conn := c.conns[i]
		for k := range registerClients + 1 {
			w := &worker{id: id, member: m.name, conn: conn, control: api.NewControlServiceClient(conn), rec: rec,
				acked: &c.acked, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id)+1))}
			var op func(context.Context) bool
			if k < registerClients {
				w.think = [2]time.Duration{10 * time.Millisecond, 50 * time.Millisecond}
				rc := &registerClient{worker: w, keys: keys, known: map[string]*api.Service{},
					consistency: api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE}
				if cfg.LocalReads {
					rc.consistency = api.ReadConsistency_READ_CONSISTENCY_LOCAL
				}
				op = rc.op
			} else {
				w.think = [2]time.Duration{20 * time.Millisecond, 80 * time.Millisecond}
				op = (&setClient{worker: w}).op
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.loop(wctx, op)
			}()
			id++
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}
