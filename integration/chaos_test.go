package integration

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/chaos"
	"github.com/jaco-project/jaco/internal/linearcheck"
)

// chaosSeed is the fixed seed of the CI runs: a failure replays with it
// (JACO_CHAOS_SEED overrides it, for a replay or `make chaos`).
const chaosSeed = 20261125

// chaosDuration is how long each nemesis injects faults in CI: one
// episode (a fault held 3-6 s, its heal, recovery and a quiet spell), so
// that every nemesis of the suite fits in a few minutes of one test slot.
const chaosDuration = 8 * time.Second

// TestChaos runs every nemesis against both workloads (docs/design.md
// §14), one cluster of three managers each, and requires no
// linearizability violation, no lost acknowledged write, no crash and a
// cluster that recovers once each fault heals. It logs how long writes
// stopped. JACO_CHAOS_NEMESES narrows it to a comma-separated list of
// nemeses ("all" for every one, "random" for one picked per episode),
// JACO_CHAOS_DURATION and JACO_CHAOS_SEED lengthen and vary it,
// JACO_CHAOS_MANAGERS=5 runs five managers instead of three, and
// JACO_CHAOS_EVIDENCE is where a failed run's histories, visualizations
// and daemon logs are kept (default: the system's temporary directory; the
// path is printed). JACO_CHAOS_REPORT writes the results table there.
func TestChaos(t *testing.T) {
	t.Parallel()
	requireNetns(t)
	seed := uint64(chaosSeed)
	if s := os.Getenv("JACO_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("JACO_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	duration := chaosDuration
	if s := os.Getenv("JACO_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("JACO_CHAOS_DURATION=%q: %v", s, err)
		}
		duration = d
	}
	managers := 3
	if s := os.Getenv("JACO_CHAOS_MANAGERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("JACO_CHAOS_MANAGERS=%q: %v", s, err)
		}
		managers = n
	}
	var names []string
	for _, n := range strings.Split(cmp.Or(os.Getenv("JACO_CHAOS_NEMESES"), "all"), ",") {
		if n == "all" {
			names = append(names, chaos.NemesisNames()...)
		} else {
			names = append(names, n)
		}
	}
	// Each nemesis has a cluster of its own, so in CI they run side by
	// side. A longer run (make chaos) measures how long writes stop, which
	// a neighbour's load would lengthen: there they run one at a time.
	_, measuring := os.LookupEnv("JACO_CHAOS_DURATION")
	var (
		mu      sync.Mutex
		reports []*chaos.Report
	)
	t.Run("nemeses", func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				if !measuring {
					t.Parallel()
				}
				rep := runChaos(t, name, managers, seed, duration)
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, rep)
			})
		}
	})
	// Parallel nemeses finish in any order; the table lists them in the
	// order they were named.
	slices.SortStableFunc(reports, func(a, b *chaos.Report) int {
		return slices.Index(names, a.Nemesis) - slices.Index(names, b.Nemesis)
	})
	if out := os.Getenv("JACO_CHAOS_REPORT"); out != "" {
		if err := chaos.WriteResults(out, reports, duration); err != nil {
			t.Fatal(err)
		}
	}
}

// runChaos runs one nemesis and fails t on anything the run found.
func runChaos(t testing.TB, name string, managers int, seed uint64, duration time.Duration) *chaos.Report {
	t.Helper()
	// Not t.TempDir: a failed run's histories and daemon logs are kept.
	dir, err := os.MkdirTemp(os.Getenv("JACO_CHAOS_EVIDENCE"), "jaco-chaos-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("histories and daemon logs kept in %s", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := chaos.Run(ctx, chaos.Config{
		Binaries:     chaos.Binaries{Jacod: jacodBin, Jaco: jacoBin},
		Nemesis:      name,
		Managers:     managers,
		Seed:         seed,
		Duration:     duration,
		Dir:          dir,
		CheckTimeout: 2 * time.Minute,
		Log:          slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		t.Fatalf("chaos run seed=%d nemesis=%s: %v", seed, name, err)
	}
	p50, longest := rep.Unavailability()
	t.Logf("%s in %s; writes stopped p50 %s, max %s", rep, time.Since(start).Round(time.Second), p50, longest)
	if rep.Failed() {
		t.Errorf("chaos run seed=%d nemesis=%s failed; replay with JACO_CHAOS_SEED=%d JACO_CHAOS_NEMESES=%s JACO_CHAOS_DURATION=%s",
			seed, name, seed, name, duration)
	}
	for _, w := range rep.Workloads {
		if w.Result.Verdict == linearcheck.Inconclusive {
			t.Errorf("%s: the check was inconclusive: shorten the run or the clients' rate", w.Workload)
		}
	}
	return rep
}

// testWriter sends the runner's log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// TestChaosCatchesStaleLocalReads shows the runner is not blind: with the
// register workload reading from the answering manager's store, a leader
// cut off from the others keeps answering its clients from a store the
// majority has moved past, and the run must report that as a violation,
// with its history and visualization written down.
func TestChaosCatchesStaleLocalReads(t *testing.T) {
	t.Parallel()
	requireNetns(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, chaos.Config{
		Binaries:   chaos.Binaries{Jacod: jacodBin, Jaco: jacoBin},
		Nemesis:    "partition-leader-alone",
		Seed:       chaosSeed,
		Duration:   5 * time.Second, // one episode
		Dir:        dir,
		LocalReads: true,
		Log:        slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if !rep.Failed() || len(rep.Workloads) != 2 {
		t.Fatal("stale local reads through a cut-off leader passed the check")
	}
	reg := rep.Workloads[0].Result
	if reg.Verdict != linearcheck.Violation {
		t.Fatalf("registers: %s, want a violation", reg)
	}
	for _, f := range []string{reg.HistoryFile, reg.VisualizationFile} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 || !strings.HasPrefix(f, dir) {
			t.Errorf("evidence file %q missing, empty or outside %s: %v", f, dir, err)
		}
	}
	if !strings.Contains(rep.String(), "seed=20261125") || !strings.Contains(rep.String(), "isolate ") {
		t.Errorf("the report does not name the seed and the schedule:\n%s", rep)
	}
	// The set workload reads linearizably at the end, and is fine.
	if set := rep.Workloads[1]; !set.Result.OK() || set.Lost != 0 {
		t.Errorf("set: %s", set.Result)
	}
}
