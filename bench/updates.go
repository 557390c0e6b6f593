package main

// `jaco-bench updates` measures how long a rolling update of a 30-replica
// hook-bundle service takes (UpdateService with force_update+1 → the
// service's update_status COMPLETED with every replica new and RUNNING),
// for update parallelism 1, 5 and 30 with a 0 s monitor (the machinery's
// own cost) and for parallelism 30 with the default 5 s monitor, beside a
// floor measured in the same run: the same replace cycle done directly
// on the same launch script, started as the hooks runtime starts it
// (`jacod hook-shim DIR`) and stopped as it stops it (SIGINT through the
// shim), p at a time. See docs/bench/updates.md.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/agent/exec/hooks"
	"github.com/jaco-project/jaco/internal/testcluster"
)

// updateConfig is one policy measured.
type updateConfig struct {
	Parallelism int           `json:"parallelism"`
	Monitor     time.Duration `json:"monitor_ns"`
}

func (c updateConfig) String() string {
	return fmt.Sprintf("p=%d monitor=%s", c.Parallelism, c.Monitor)
}

// updateConfigs are parallelisms 1, 5 and 30 with no monitor, which
// measure the update machine itself, and the widest one with Swarm's
// default monitor to show what it adds (docs/bench/updates.md).
var updateConfigs = []updateConfig{
	{Parallelism: 1}, {Parallelism: 5}, {Parallelism: 30},
	{Parallelism: 30, Monitor: 5 * time.Second},
}

type updatesOpts struct {
	work, out   string
	jacod, jaco string
	replicas    int
	rounds      int
	loadBefore  string
}

// updateSample is one timed roll: jaco's or the floor's.
type updateSample struct {
	Round  int          `json:"round"`
	Config updateConfig `json:"config"`
	// Kind is "jaco" or "floor".
	Kind   string  `json:"kind"`
	TotalS float64 `json:"total_s"`
	// Jaco only: the UpdateService call, the leader's own
	// update_status.completed_at − started_at, and the phases of the new
	// replicas from the agent's log (ms).
	RPCMS    float64             `json:"rpc_ms,omitempty"`
	LeaderS  float64             `json:"leader_s,omitempty"`
	Phases   map[string]latStats `json:"phases,omitempty"`
	Polls    int                 `json:"polls,omitempty"`
	LoadAvg  string              `json:"loadavg_at_start"`
	Replaced int                 `json:"replaced"`
}

type updatesRun struct {
	Env     map[string]string `json:"env"`
	Opts    map[string]any    `json:"options"`
	Samples []*updateSample   `json:"samples"`
}

func updatesCmd() *cobra.Command {
	var o updatesOpts
	var rerender string
	cmd := command("updates",
		"Time a rolling update of a 30-replica service beside replacing its replicas directly (root)",
		`jaco-bench updates measures how long a rolling update of a hook-bundle
service takes, from UpdateService with force_update+1 until the service's
update_status is COMPLETED with every replica new and RUNNING, for update
parallelism 1, 5 and 30 with a 0 s monitor and for 30 with the default 5 s
monitor, beside a floor measured in the same run: the same launch script
replaced directly through 'jacod hook-shim', p at a time.

It starts one jacod on loopback that is the manager and runs the replicas,
and needs root. The raw results (results.json, results.md) go to --out.
scripts/bench-updates.sh (make bench-updates) installs what it needs, builds
the binaries and runs it (docs/bench/updates.md).`,
		func() error {
			if rerender != "" {
				return rerenderUpdates(rerender)
			}
			return runUpdates(o)
		})
	f := cmd.Flags()
	f.StringVar(&o.work, "work", "", "scratch directory (required; data dir, bundles, logs)")
	f.StringVar(&o.out, "out", "docs/bench/updates", "where the raw results are written")
	f.StringVar(&o.jacod, "jacod", "bin/jacod", "jacod binary (also the floor's hook shim)")
	f.StringVar(&o.jaco, "jaco", "bin/jaco", "jaco binary")
	f.IntVar(&o.replicas, "replicas", 30, "replicas of the service")
	f.IntVar(&o.rounds, "rounds", 5, "rounds; each measures the floor and jaco for every configuration")
	f.StringVar(&o.loadBefore, "load-before", "", "load average before the run (recorded in the results)")
	f.StringVar(&rerender, "rerender", "", "only write the markdown again from this results.json")
	f.SortFlags = false
	return cmd
}

func runUpdates(o updatesOpts) error {
	if o.work == "" {
		return errors.New("updates: --work is required")
	}
	if o.replicas < 1 || o.rounds < 1 {
		return errors.New("updates: --replicas and --rounds must be positive")
	}
	if os.Geteuid() != 0 {
		return errors.New("updates: needs root (jacod's agent runs the replicas)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer testcluster.KillAll()
	return measureUpdates(ctx, o)
}

func measureUpdates(ctx context.Context, o updatesOpts) error {
	if err := os.MkdirAll(o.work, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	// Whatever happens, no shim or replica started under work outlives
	// the run (replicas outlive jacod by design).
	// jacod's replicas and the floor's.
	defer hooks.StopShimsUnder(o.work, 5*time.Second)
	run := &updatesRun{Env: updatesEnv(o), Opts: map[string]any{
		"replicas": o.replicas, "rounds": o.rounds, "configs": updateConfigs,
		"launch": updateLaunch, "completion": "GetService polled every 20 ms until update_status COMPLETED, then ListTasks until every replica is new and RUNNING",
	}}
	fl, err := newShimFloor(o)
	if err != nil {
		return err
	}
	defer fl.close()
	jn, err := startUpdatesNode(ctx, o)
	if err != nil {
		return err
	}
	defer jn.close(ctx)

	var runErr error
	for r := 1; r <= o.rounds && runErr == nil; r++ {
		floors := map[int]*updateSample{}
		for _, c := range updateConfigs {
			if floors[c.Parallelism] == nil {
				log.Printf("updates: round %d: floor p=%d", r, c.Parallelism)
				s, err := fl.measure(ctx, c.Parallelism)
				if err != nil {
					runErr = fmt.Errorf("round %d floor p=%d: %w", r, c.Parallelism, err)
					break
				}
				s.Round, s.Config = r, updateConfig{Parallelism: c.Parallelism}
				floors[c.Parallelism] = s
				run.Samples = append(run.Samples, s)
				log.Printf("updates: round %d: floor p=%d: %.3f s", r, c.Parallelism, s.TotalS)
			}
			log.Printf("updates: round %d: jaco %s", r, c)
			s, err := jn.measure(ctx, c)
			if err != nil {
				runErr = fmt.Errorf("round %d jaco %s: %w", r, c, err)
				break
			}
			s.Round = r
			run.Samples = append(run.Samples, s)
			log.Printf("updates: round %d: jaco %s: %.3f s (leader %.3f s)", r, c, s.TotalS, s.LeaderS)
		}
	}
	run.Env["loadavg_after"] = loadAverage()
	if err := writeUpdates(o.out, run); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

// updatesEnv records what the figures depend on.
func updatesEnv(o updatesOpts) map[string]string {
	env := map[string]string{
		"date":         time.Now().UTC().Format(time.RFC3339),
		"nproc":        fmt.Sprint(runtime.NumCPU()),
		"go":           runtime.Version(),
		"loadavg_run":  loadAverage(),
		"loadavg_prev": o.loadBefore,
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				env["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return env
}
