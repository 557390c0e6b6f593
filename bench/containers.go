package main

// `jaco-bench containers` measures create → running latency of replicas
// under containerd + runc with a loaded image, beside floors measured in
// the same run on the same private containerd:
//
//   - ctr: `ctr run -d` of the same image, one container at a time
//     (containerd's own CLI starting it: includes ctr's own process start
//     and no CNI);
//   - client: what jaco's containerd controller does, through the Go
//     client in this process (network namespace, container with an
//     overlayfs snapshot, CNI bridge attachment, task with a log file,
//     start), one at a time, all N at once, and all N from one start
//     with at most 4 in flight; and one at a time with a bridge-only CNI
//     config (no portmap, firewall or masquerading: no iptables);
//   - jaco: one jacod (single manager that also runs replicas) on the same
//     containerd, `service create --replicas N`, latency per replica from
//     the create call to the agent's RUNNING status timestamp.
//
// Everything runs in a network namespace of its own (the command re-runs
// itself under `unshare --net`), so the CNI bridges, addresses
// (198.18.0.0/24) and iptables rules vanish with it. Needs root.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/ociimage"
	"github.com/jaco-project/jaco/internal/testcluster"
)

// isolatedNetnsEnv marks the re-run inside the private network namespace.
const isolatedNetnsEnv = "JACO_BENCH_ISOLATED_NETNS"

// benchImage is the reference the image is built and loaded under.
const benchImage = "jaco.local/bench-busybox:latest"

type containersOpts struct {
	work       string
	out        string
	jacod      string
	jaco       string
	ctr        string
	replicas   int
	rounds     int
	floors     []string
	keep       bool
	loadBefore string // load average when the script started, for the doc
}

// containersRun is everything one run measured, written as JSON.
type containersRun struct {
	Env    map[string]string `json:"env"`
	Opts   map[string]any    `json:"options"`
	Rounds []*roundResult    `json:"rounds"`
}

// roundResult is one round: the floors, then jaco.
type roundResult struct {
	Round  int            `json:"round"`
	Floors []*floorResult `json:"floors"`
	Jaco   *jacoResult    `json:"jaco,omitempty"`
	// LoadAvg is the load average (1, 5, 15 min) when the round began.
	LoadAvg string `json:"loadavg_at_start"`
}

func containersCmd() *cobra.Command {
	var o containersOpts
	var floors, rerender string
	cmd := command("containers",
		"Time create → running of replicas under containerd beside its floors (root)",
		`jaco-bench containers measures create → running latency of replicas under
containerd + runc with a loaded image, beside floors measured in the same run
on the same private containerd: 'ctr run -d' of the same image, and what jaco's
containerd controller does, through the Go client, one at a time and all at
once (--floors); then one jacod and 'service create --replicas N', latency per
replica from the create call to its RUNNING status.

It re-runs itself in a network namespace of its own, so the CNI bridges,
addresses and iptables rules vanish with it, and needs root. The results
(results.json, results.md) go to --out. scripts/bench-containers.sh installs
what it needs, builds the binaries and runs it (docs/bench/containers.md).`,
		func() error {
			if rerender != "" {
				return rerenderContainers(rerender)
			}
			return runContainers(o, floors)
		})
	f := cmd.Flags()
	f.StringVar(&o.work, "work", "", "scratch directory (required; containerd root, data dirs, logs)")
	f.StringVar(&o.out, "out", "docs/bench/containers", "where the results are written")
	f.StringVar(&o.jacod, "jacod", "bin/jacod", "jacod binary")
	f.StringVar(&o.jaco, "jaco", "bin/jaco", "jaco binary")
	f.StringVar(&o.ctr, "ctr", "ctr", "ctr binary (Debian's containerd package)")
	f.IntVar(&o.replicas, "replicas", 100, "containers per measurement (1 to 120)")
	f.IntVar(&o.rounds, "rounds", 3, "rounds (each: the floors, then jaco)")
	f.StringVar(&floors, "floors", "ctr,client,client-concurrent,client-4-at-once,client-bare-cni", "floors measured each round before jaco")
	f.BoolVar(&o.keep, "keep", false, "keep the scratch directory's logs")
	f.StringVar(&o.loadBefore, "load-before", "", "load average before the run (recorded in the results)")
	f.StringVar(&rerender, "rerender", "", "only write results.md again from this results.json")
	f.SortFlags = false
	return cmd
}

func runContainers(o containersOpts, floors string) error {
	if o.work == "" {
		return errors.New("containers: --work is required")
	}
	if o.replicas < 1 || o.replicas > 120 {
		// The containers' /25 holds 125 addresses.
		return fmt.Errorf("containers: --replicas %d: want 1..120", o.replicas)
	}
	if os.Geteuid() != 0 {
		return errors.New("containers: needs root (containerd, runc and CNI)")
	}
	for _, f := range strings.Split(floors, ",") {
		if f == "" {
			continue
		}
		if _, ok := floorTitles[f]; !ok {
			return fmt.Errorf("containers: unknown floor %q", f)
		}
		o.floors = append(o.floors, f)
	}
	if os.Getenv(isolatedNetnsEnv) == "" {
		return reRunIsolated()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer testcluster.KillAll()
	return measureContainers(ctx, o)
}

// reRunIsolated runs this command again inside a new network namespace
// with loopback up, passing output and exit status through.
func reRunIsolated() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := containerdtest.NetnsCommand(self, isolatedNetnsEnv)
	// The child dies with this process; the death signal belongs to the
	// thread that started it.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("re-run in a network namespace: %w", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			if err != nil {
				return fmt.Errorf("isolated run: %w", err)
			}
			return nil
		}
	}
}

func measureContainers(ctx context.Context, o containersOpts) error {
	if err := os.MkdirAll(o.work, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(o.work)
	}
	run := &containersRun{Env: machineEnv(o), Opts: map[string]any{
		"replicas": o.replicas, "rounds": o.rounds, "floors": o.floors, "image": benchImage,
	}}

	archive := filepath.Join(o.work, "image.tar")
	if err := buildImage(archive); err != nil {
		return err
	}
	log.Printf("containers: starting a private containerd")
	d, err := containerdtest.StartDaemon(ctx, filepath.Join(o.work, "containerd"))
	if err != nil {
		return err
	}
	defer func() {
		if err := d.Stop(); err != nil {
			log.Printf("containers: stop containerd: %v", err)
		}
	}()
	run.Env["containerd_socket"] = d.Address()

	fl, err := newFloors(ctx, o, d.Address(), archive)
	if err != nil {
		return err
	}
	defer fl.close()

	jn, err := startJacoNode(ctx, o, d.Address(), archive)
	if err != nil {
		return err
	}
	defer jn.close()

	var runErr error
	for r := 1; r <= o.rounds && runErr == nil; r++ {
		rr := &roundResult{Round: r, LoadAvg: loadAverage()}
		run.Rounds = append(run.Rounds, rr)
		for _, f := range o.floors {
			log.Printf("containers: round %d: floor %s, %d containers", r, f, o.replicas)
			res, err := fl.measure(ctx, f, r)
			if err != nil {
				runErr = fmt.Errorf("round %d floor %s: %w", r, f, err)
				break
			}
			rr.Floors = append(rr.Floors, res)
			log.Printf("containers: round %d: %s p50 %.0f ms p99 %.0f ms, all in %.1f s", r, f, res.Latency.P50, res.Latency.P99, res.TotalS)
		}
		if runErr != nil {
			break
		}
		log.Printf("containers: round %d: jaco, service of %d replicas", r, o.replicas)
		res, err := jn.measure(ctx, r)
		if err != nil {
			runErr = fmt.Errorf("round %d jaco: %w", r, err)
			break
		}
		rr.Jaco = res
		log.Printf("containers: round %d: jaco p50 %.0f ms p99 %.0f ms, all in %.1f s", r, res.FromCreate.P50, res.FromCreate.P99, res.TotalS)
	}
	run.Env["loadavg_after"] = loadAverage()
	if err := writeContainers(o.out, run); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

func buildImage(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ociimage.Build(f, benchImage); err != nil {
		f.Close()
		return fmt.Errorf("build image: %w", err)
	}
	return f.Close()
}

// machineEnv records what the figures depend on.
func machineEnv(o containersOpts) map[string]string {
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
	for key, argv := range map[string][]string{
		"containerd": {"containerd", "--version"},
		"runc":       {"runc", "--version"},
		"ctr":        {o.ctr, "--version"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).Output(); err == nil {
			env[key] = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		}
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
