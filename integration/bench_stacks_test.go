package integration

// The stack benchmark (docs/bench/stacks.md): a stack of 50 services of
// two replicas deployed in one `jaco stack deploy`, beside the same 50
// services made by 50 `jaco service create` calls one after another, on
// one container cluster, the two paths alternated.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	c := newContainerCluster(b, 2)
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
	wantOK(b, c.manager.jaco("stack", "deploy", "-d", "-q", "-c", file, name))
	s.calls = time.Since(start)
	s.first, s.converged = c.waitStackRunning(b, name+"_", start)
	rm := time.Now()
	wantOK(b, c.manager.jaco("stack", "rm", name))
	c.waitStackGone(b, name+"_")
	s.removed = time.Since(rm)
	return s
}

// createPath is stackPath with one `service create` per service, one
// after another, and one `service rm` naming them all.
func (c *ccluster) createPath(b *testing.B, name string) stackSample {
	b.Helper()
	var s stackSample
	start := time.Now()
	for i := range stackServices {
		args := []string{"service", "create", "-d", "-q", "--name", fmt.Sprintf("%s_s%02d", name, i),
			"--replicas", fmt.Sprint(stackReplicas), "--stop-grace-period", "1s", "--restart-delay", "1s",
			containerImage, "--"}
		wantOK(b, c.manager.jaco(append(args, idleCmd...)...))
	}
	s.calls = time.Since(start)
	s.first, s.converged = c.waitStackRunning(b, name+"_", start)
	names := []string{"service", "rm"}
	for i := range stackServices {
		names = append(names, fmt.Sprintf("%s_s%02d", name, i))
	}
	rm := time.Now()
	wantOK(b, c.manager.jaco(names...))
	c.waitStackGone(b, name+"_")
	s.removed = time.Since(rm)
	return s
}

// stackCompose is the compose file of the stack path: the services and
// the stop and restart settings createPath gives on the command line.
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

// waitStackRunning polls `service ls` every stackPoll until the
// stackServices services named prefix* run stackReplicas replicas each,
// and returns how long after start the first replica and the last ran
// (as the poll saw them: up to stackPoll late).
func (c *ccluster) waitStackRunning(b *testing.B, prefix string, start time.Time) (first, all time.Duration) {
	b.Helper()
	deadline := start.Add(stackTimeout)
	for {
		running, svcs, err := c.stackRunning(prefix)
		if err != nil {
			b.Fatal(err)
		}
		if running > 0 && first == 0 {
			first = time.Since(start)
		}
		if svcs == stackServices && running == stackServices*stackReplicas {
			return first, time.Since(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s*: %d of %d replicas running in %d services after %v", prefix, running,
				stackServices*stackReplicas, svcs, stackTimeout)
		}
		time.Sleep(stackPoll)
	}
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
