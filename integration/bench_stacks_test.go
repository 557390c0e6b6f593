package integration

// The stack benchmark (docs/bench/stacks.md): a stack of 50 services of
// two replicas deployed in one `jaco stack deploy`, beside the same 50
// services (on the same overlay network) made by a `jaco network create`
// and 50 `jaco service create` calls one after another, on one container
// cluster, the two paths alternated.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ctrdclient "github.com/containerd/containerd/v2/client"

	"github.com/jaco-project/jaco/internal/containerdtest"
)

const (
	stackServices = 50 // services per path and round
	stackReplicas = 2  // replicas of each
	// stackRounds is the least number of rounds (one of each path) a run
	// makes, whatever b.N: fewer would leave the medians to chance.
	stackRounds = 3
	// stackPoll is how often convergence is looked at: one `service ls`
	// (one process, one read of the store) per poll.
	stackPoll = 100 * time.Millisecond
	// stackTimeout bounds one convergence or one removal.
	stackTimeout = 5 * time.Minute
)

// stackSample is one path's timings in one round, from the moment its
// first call starts.
type stackSample struct {
	calls     time.Duration // until the last CLI call returned
	first     time.Duration // until the first replica ran
	half      time.Duration // until half of them ran
	converged time.Duration // until every replica ran
	removed   time.Duration // from the removal's start until nothing is left
}

// BenchmarkStacks alternates, for max(b.N, stackRounds) rounds, which
// path goes first alternating too:
//   - stack: a compose file of 50 services (two replicas each, the idle
//     command, stop_grace_period 1s) deployed with `jaco stack deploy -d`;
//   - create: the same 50 services, each by `jaco service create -d`, one
//     after another.
//
// Each path is timed from its first call until all 100 replicas run, then
// removed (`stack rm`, or one `service rm` naming the 50) and waited for until no service
// and no container of it is left. Medians and maxima go out with
// b.ReportMetric, in seconds, and stack/create is the ratio of the
// medians.
func BenchmarkStacks(b *testing.B) {
	c := newStackCluster(b)
	dir := b.TempDir()
	rounds := max(b.N, stackRounds)
	var stack, create []stackSample
	b.ResetTimer()
	for i := range rounds {
		paths := []func(){
			func() { stack = append(stack, c.stackPath(b, dir, fmt.Sprintf("a%d", i))) },
			func() { create = append(create, c.createPath(b, fmt.Sprintf("b%d", i))) },
		}
		if i%2 == 1 {
			paths[0], paths[1] = paths[1], paths[0]
		}
		for _, p := range paths {
			p()
		}
		b.Logf("round %d: stack %+v; create %+v; load %s", i, stack[i], create[i], loadAvg())
	}
	b.StopTimer()
	report := func(name string, xs []stackSample) {
		for _, m := range []struct {
			what string
			of   func(stackSample) time.Duration
		}{
			{"calls", func(s stackSample) time.Duration { return s.calls }},
			{"first", func(s stackSample) time.Duration { return s.first }},
			{"half", func(s stackSample) time.Duration { return s.half }},
			{"converged", func(s stackSample) time.Duration { return s.converged }},
			{"removed", func(s stackSample) time.Duration { return s.removed }},
		} {
			b.ReportMetric(quantile(seconds(xs, m.of), 0.5), name+"-"+m.what+"-p50-s")
			b.ReportMetric(quantile(seconds(xs, m.of), 1), name+"-"+m.what+"-max-s")
		}
	}
	report("stack", stack)
	report("create", create)
	conv := func(s stackSample) time.Duration { return s.converged }
	calls := func(s stackSample) time.Duration { return s.calls }
	b.ReportMetric(quantile(seconds(stack, conv), 0.5)/quantile(seconds(create, conv), 0.5), "converged-stack/create")
	b.ReportMetric(quantile(seconds(stack, calls), 0.5)/quantile(seconds(create, calls), 0.5), "calls-stack/create")
}

// newStackCluster is newContainerCluster's cluster (a drained manager,
// two workers) with a /24 of container addresses per worker: the default
// derived /28 holds 13 containers, and a worker here runs 50 or more.
func newStackCluster(b *testing.B) *ccluster {
	b.Helper()
	requireNetns(b)
	c := &ccluster{ctrd: containerdtest.Start(b), nodeIDs: map[string]string{}}
	cl, err := ctrdclient.New(c.ctrd.Address())
	if err != nil {
		b.Fatalf("containerd client: %v", err)
	}
	b.Cleanup(func() { cl.Close() })
	c.client = cl
	c.imageTar = buildTestImage(b)
	c.hub = newHub(b)
	withCtrd := []string{"--containerd-address", c.ctrd.Address()}
	c.manager = c.addNode(b, "m1", append(withCtrd, "--heartbeat-period", "500ms")...)
	c.manager.initCluster(b, "--overlay-pool", testOverlayPool)
	for i := 1; i <= 2; i++ {
		subnet := []string{"--container-subnet", fmt.Sprintf("198.18.%d.0/24", 15+i)}
		c.joinWorker(b, c.addNode(b, fmt.Sprintf("w%d", i), append(withCtrd, subnet...)...))
	}
	wantOK(b, c.manager.jaco("node", "update", "--availability", "drain", "m1"))
	c.loadImage(b, c.manager)
	c.waitNodes(b, c.workers, "ready")
	return c
}

// stackPath deploys name as a stack of stackServices services, waits for
// every replica, removes it and waits until nothing of it is left.
func (c *ccluster) stackPath(b *testing.B, dir, name string) stackSample {
	b.Helper()
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, []byte(stackCompose()), 0o600); err != nil {
		b.Fatal(err)
	}
	var s stackSample
	start := time.Now()
	w := c.watchStack(name+"_", start)
	defer w.stop()
	wantOK(b, c.manager.jaco("stack", "deploy", "-d", "-q", "-c", file, name))
	s.calls = time.Since(start)
	w.wait(b, &s)
	rm := time.Now()
	wantOK(b, c.manager.jaco("stack", "rm", name))
	c.waitStackGone(b, name+"_")
	s.removed = time.Since(rm)
	return s
}

// createPath is stackPath by hand: the network a stack's services join
// when they name none (NAME_default), one `service create` per service on
// it, one after another; then one `service rm` naming them all and the
// network's removal.
func (c *ccluster) createPath(b *testing.B, name string) stackSample {
	b.Helper()
	var s stackSample
	start := time.Now()
	w := c.watchStack(name+"_", start)
	defer w.stop()
	network := name + "_default"
	wantOK(b, c.manager.jaco("network", "create", network))
	for i := range stackServices {
		args := []string{"service", "create", "-d", "-q", "--name", fmt.Sprintf("%s_s%02d", name, i),
			"--replicas", fmt.Sprint(stackReplicas), "--stop-grace-period", "1s", "--restart-delay", "1s",
			"--network", network, containerImage, "--"}
		wantOK(b, c.manager.jaco(append(args, idleCmd...)...))
	}
	s.calls = time.Since(start)
	w.wait(b, &s)
	names := []string{"service", "rm"}
	for i := range stackServices {
		names = append(names, fmt.Sprintf("%s_s%02d", name, i))
	}
	rm := time.Now()
	wantOK(b, c.manager.jaco(names...))
	c.waitStackGone(b, name+"_")
	wantOK(b, c.manager.jaco("network", "rm", network))
	s.removed = time.Since(rm)
	return s
}

// stackCompose is the compose file of the stack path: the services and
// the stop and restart settings createPath gives on the command line.
// Naming no network, each joins the stack's default one, as createPath's
// do.
func stackCompose() string {
	var sb strings.Builder
	sb.WriteString("services:\n")
	for i := range stackServices {
		fmt.Fprintf(&sb, "  s%02d:\n    image: %s\n    stop_grace_period: 1s\n", i, containerImage)
		sb.WriteString("    command: [\"sh\", \"-c\", \"trap 'exit 0' INT TERM; while :; do sleep 1 & wait $$!; done\"]\n")
		fmt.Fprintf(&sb, "    deploy:\n      replicas: %d\n      restart_policy: {delay: 1s}\n", stackReplicas)
	}
	return sb.String()
}

// convergence is when, after a path's start, its replicas ran, as
// `service ls` polled every stackPoll saw them (up to stackPoll late).
type convergence struct {
	first, half, all time.Duration // the first replica, half of them, all
	err              error
}

// stackWatch is a goroutine polling a path's services; stop ends it and
// waits for it, so it never outlives its path (nor the cluster).
type stackWatch struct {
	done     chan convergence // the result, sent once
	cancel   context.CancelFunc
	finished chan struct{}
}

func (w *stackWatch) stop() {
	w.cancel()
	<-w.finished
}

// watchStack polls, from start, until the stackServices services named
// prefix* run stackReplicas replicas each. Polling starts with the path's
// first call, so the create path's replicas that run before its last call
// count from when they ran.
func (c *ccluster) watchStack(prefix string, start time.Time) *stackWatch {
	ctx, cancel := context.WithTimeout(context.Background(), stackTimeout)
	w := &stackWatch{done: make(chan convergence, 1), cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(w.finished)
		var cv convergence
		for {
			running, svcs, err := c.stackRunning(prefix)
			if err != nil {
				cv.err = err
				w.done <- cv
				return
			}
			now := time.Since(start)
			if running > 0 && cv.first == 0 {
				cv.first = now
			}
			if running >= stackServices*stackReplicas/2 && cv.half == 0 {
				cv.half = now
			}
			if svcs == stackServices && running == stackServices*stackReplicas {
				cv.all = now
				w.done <- cv
				return
			}
			select {
			case <-ctx.Done():
				cv.err = fmt.Errorf("%s*: %d of %d replicas running in %d services: %w", prefix, running,
					stackServices*stackReplicas, svcs, ctx.Err())
				w.done <- cv
				return
			case <-time.After(stackPoll):
			}
		}
	}()
	return w
}

// wait waits for the result and fills s with it.
func (w *stackWatch) wait(b *testing.B, s *stackSample) {
	b.Helper()
	cv := <-w.done
	if cv.err != nil {
		b.Fatal(cv.err)
	}
	s.first, s.half, s.converged = cv.first, cv.half, cv.all
}

// stackRunning sums the running replicas of the services named prefix*.
func (c *ccluster) stackRunning(prefix string) (running uint64, svcs int, err error) {
	ls, err := decode[[]stackService](c.manager.jaco("service", "ls", "--format", "json"))
	if err != nil {
		return 0, 0, err
	}
	for _, s := range ls {
		if strings.HasPrefix(s.Name, prefix) {
			svcs++
			running += s.Running
		}
	}
	return running, svcs, nil
}

// waitStackGone waits until no service is named prefix* and no worker has
// a container left (each path starts from an empty cluster).
func (c *ccluster) waitStackGone(b *testing.B, prefix string) {
	b.Helper()
	deadline := time.Now().Add(stackTimeout)
	for {
		_, svcs, err := c.stackRunning(prefix)
		if err != nil {
			b.Fatal(err)
		}
		left := 0
		for _, w := range c.workers {
			cs, err := c.containers(w.name)
			if err != nil {
				b.Fatal(err)
			}
			left += len(cs)
		}
		if svcs == 0 && left == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s*: %d services and %d containers left after %v", prefix, svcs, left, stackTimeout)
		}
		time.Sleep(stackPoll)
	}
}

// seconds maps xs through of, in seconds.
func seconds(xs []stackSample, of func(stackSample) time.Duration) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = of(x).Seconds()
	}
	return out
}

// loadAvg is the first three fields of /proc/loadavg, for the log.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
