package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
)

// rateResult is one system at one offered rate.
type rateResult struct {
	System      string         `json:"system"`
	Offered     float64        `json:"offered_per_s"`
	DurationS   float64        `json:"duration_s"`
	Clients     int            `json:"clients"`
	Conns       int            `json:"conns"`
	Target      string         `json:"target"` // the member written to (the leader)
	Scheduled   int            `json:"scheduled"`
	Acked       int            `json:"acked"`
	Dropped     int            `json:"dropped"`
	Abandoned   int            `json:"abandoned"`
	Errors      map[string]int `json:"errors"`
	ElapsedS    float64        `json:"elapsed_s"`
	Achieved    float64        `json:"achieved_per_s"`
	FromSched   latStats       `json:"latency_from_scheduled"`
	Service     latStats       `json:"latency_service"`
	Pass        bool           `json:"pass"`
	Fails       []string       `json:"fails,omitempty"`
	PassService bool           `json:"pass_etcdctl_timing"`
	ServerCPU   float64        `json:"server_cpu_s"`
	CPUWindow   float64        `json:"server_cpu_window_s"`
	ClientCPU   float64        `json:"client_cpu_s"`
	// Cores is the machine's CPU count: the servers and this load
	// generator share them (machineBusy).
	Cores     int       `json:"cores"`
	RSSMiB    []float64 `json:"rss_mib"`
	IdleCores float64   `json:"server_idle_cores"` // CPU the three servers use unloaded
	Load1     string    `json:"loadavg_before"`
	// Elections is how much the raft term rose from just before the load
	// to just after it: 0 when the leader held throughout.
	Elections uint64 `json:"elections"`
	PerSecond []int  `json:"acks_per_second"`
	// Trace is the run tenth by tenth (rate-trace.csv).
	Trace []traceRow `json:"-"`
}

// leaderFirst is pids with the leader's (pids[li]) moved to the front.
func leaderFirst(pids []int, li int) []int {
	out := append([]int{pids[li]}, pids[:li]...)
	return append(out, pids[li+1:]...)
}

// checkPerf applies the pass rule of `etcdctl check perf`: no errors, more
// than 90 % of the offered rate, slowest request at most 0.5 s, standard
// deviation at most 0.1 s. Dropped and abandoned sends count as errors.
func checkPerf(r *rateResult, l latStats) (bool, []string) {
	var fails []string
	if n := r.Dropped + r.Abandoned + sum(r.Errors); n > 0 {
		fails = append(fails, fmt.Sprintf("%d errors/dropped", n))
	}
	if r.Achieved/r.Offered <= 0.9 {
		fails = append(fails, fmt.Sprintf("throughput %.0f/s ≤ 90%%", r.Achieved))
	}
	if l.Max > 500 {
		fails = append(fails, fmt.Sprintf("slowest %.0f ms > 500 ms", l.Max))
	}
	if l.Stddev > 100 {
		fails = append(fails, fmt.Sprintf("stddev %.0f ms > 100 ms", l.Stddev))
	}
	return len(fails) == 0, fails
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// errWord names an error for counting: jaco's reason word, else the gRPC
// code and message, else the text.
func errWord(err error) string {
	if w := reason.Of(err); w != "" {
		return w
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline_exceeded"
	}
	if s, ok := status.FromError(err); ok {
		msg := s.Message()
		if len(msg) > 80 {
			msg = msg[:80]
		}
		return s.Code().String() + ": " + msg
	}
	msg := err.Error()
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return msg
}

type rateOpts struct {
	rates    []float64
	clients  []int
	conns    int
	duration time.Duration
	timeout  time.Duration
	systems  []string
	settle   time.Duration
}

// runRates runs each rate against a fresh cluster of each system,
// alternating the systems, so that drift in the machine's speed touches
// both alike.
func runRates(ctx context.Context, env *env, o rateOpts) ([]*rateResult, error) {
	var out []*rateResult
	for ri, rate := range o.rates {
		for _, sys := range o.systems {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			root := filepath.Join(env.work, fmt.Sprintf("rate-%s-%d", sys, int(rate)))
			r, err := runRate(ctx, env, sys, root, rate, o.clients[ri], o)
			if err != nil {
				return out, fmt.Errorf("%s at %.0f/s: %w", sys, rate, err)
			}
			log.Printf("%s %6.0f/s offered: %8.1f/s achieved, from scheduled p50 %.2f ms p99 %.2f ms max %.1f ms, pass=%v %v",
				sys, rate, r.Achieved, r.FromSched.P50, r.FromSched.P99, r.FromSched.Max, r.Pass, r.Fails)
			out = append(out, r)
			if err := env.cleanup(root); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func runRate(ctx context.Context, env *env, sys, root string, rate float64, clients int, o rateOpts) (*rateResult, error) {
	c, err := env.newCluster(ctx, sys, root)
	if err != nil {
		return nil, err
	}
	defer c.close()
	li, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	ws, closeWriters, err := c.writers(ctx, li, o.conns)
	if err != nil {
		return nil, err
	}
	defer closeWriters()
	// Let the cluster settle (the voter reconciler's last change, the
	// first heartbeats) before measuring, and measure what it burns idle.
	pids := c.pids()
	idle0, idleT := serverCPU(pids), time.Now()
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idleCores := (serverCPU(pids) - idle0) / time.Since(idleT).Seconds()
	load1 := loadAverage()

	var perfDone func()
	if env.perf != "" {
		perfDone = startPerf(ctx, pids[li], filepath.Join(env.perf, fmt.Sprintf("perf-%s-%d.data", sys, int(rate))), o.duration)
	}
	term0, err := c.term(ctx)
	if err != nil {
		return nil, fmt.Errorf("raft term before the load: %w", err)
	}
	cpu0, cpuT := serverCPU(pids), time.Now()
	self0 := selfCPUSeconds()
	start := time.Now().Add(50 * time.Millisecond)
	traceCtx, stopTrace := context.WithCancel(ctx)
	defer stopTrace()
	traced := traceCPU(traceCtx, leaderFirst(pids, li), start)
	lr := runLoad(ctx, loadConfig{
		start:    start,
		rate:     rate,
		duration: o.duration,
		clients:  clients,
		timeout:  o.timeout,
		queue:    max(int(rate), clients),
		drain:    10 * time.Second,
	}, ws)
	r := &rateResult{
		System:    sys,
		Offered:   rate,
		DurationS: o.duration.Seconds(),
		Clients:   clients,
		Conns:     o.conns,
		Target:    c.memberName(li) + " (leader)",
		Scheduled: lr.scheduled,
		Acked:     lr.acked,
		Dropped:   lr.dropped,
		Abandoned: lr.abandoned,
		Errors:    lr.errs,
		FromSched: summarize(lr.fromScheduled),
		Service:   summarize(lr.service),
		ServerCPU: serverCPU(pids) - cpu0,
		CPUWindow: time.Since(cpuT).Seconds(),
		ClientCPU: selfCPUSeconds() - self0,
		Cores:     runtime.NumCPU(),
		PerSecond: lr.perSecond,
		IdleCores: idleCores,
		Load1:     load1,
	}
	stopTrace()
	r.Trace = traceRows(<-traced, lr.slowestByTenth)
	if perfDone != nil {
		perfDone()
	}
	term1, err := c.term(ctx)
	if err != nil {
		return nil, fmt.Errorf("raft term after the load: %w", err)
	}
	r.Elections = term1 - term0
	for _, pid := range pids {
		rss, _ := rssMiB(pid)
		r.RSSMiB = append(r.RSSMiB, rss)
	}
	if !lr.lastEnd.IsZero() {
		// As etcd's report: acknowledged writes over the time from the
		// first send to the last acknowledgement.
		r.ElapsedS = lr.lastEnd.Sub(lr.start).Seconds()
		r.Achieved = float64(lr.acked) / r.ElapsedS
	}
	r.Pass, r.Fails = checkPerf(r, r.FromSched)
	r.PassService, _ = checkPerf(r, r.Service)
	return r, nil
}

// startPerf records the leader's CPU profile with `perf record` for d;
// the returned function waits for it to finish. Go binaries keep frame
// pointers, so -g gives whole stacks.
func startPerf(ctx context.Context, pid int, out string, d time.Duration) func() {
	cmd := exec.CommandContext(ctx, "perf", "record", "-F", "499", "-g", "-p", strconv.Itoa(pid), "-o", out,
		"--", "sleep", strconv.Itoa(int(d.Seconds())))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		log.Printf("perf record: %v", err)
		return func() {}
	}
	return func() { _ = cmd.Wait() }
}

// loadAverage is /proc/loadavg's first three fields: other work on the
// machine shows there.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func serverCPU(pids []int) float64 {
	var t float64
	for _, pid := range pids {
		s, _ := cpuSeconds(pid)
		t += s
	}
	return t
}
