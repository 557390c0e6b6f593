// Command jaco-bench is jaco's benchmark harness; scripts/bench-*.sh
// build it (go build -o bin/jaco-bench ./bench, or make jaco-bench) and
// run it, and the results go to docs/bench/.
//
// Run without a command it measures a three-manager jaco cluster next to
// a three-member etcd on the same machine, on loopback only: committed
// writes at fixed offered rates (open loop), time from a leader's SIGKILL
// (or SIGSTOP) to the first acknowledged write, and time from `jaco node
// join` to VOTER. scripts/bench-cluster.sh installs what it needs and
// runs it; the results go to docs/bench/cluster/ (see
// docs/bench/cluster.md). `jaco-bench containers` measures create →
// running of replicas under containerd instead (containers.go,
// scripts/bench-containers.sh, docs/bench/containers.md); `jaco-bench
// updates` a rolling update beside its floor (updates.go,
// scripts/bench-updates.sh, docs/bench/updates.md). `jaco-bench nodes`
// simulates worker nodes against a real jacod, and `jaco-bench conns`
// measures the floor under a manager's memory per node, for the
// large-store measurement (nodes.go, conns.go,
// scripts/bench-largestore.sh).
//
// Every server it starts is its own process group with SIGKILL as parent
// death signal, and is stopped when the run ends or is interrupted. Every
// request loop is bounded in count and time.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/testcluster"
)

// env is what every phase needs: binaries and the scratch directory.
type env struct {
	work string
	jaco jacoBins
	etcd string
	// perf, when set, is where `perf record` profiles of the leader
	// during each rate run go.
	perf string
	// keep leaves each cluster's data dirs and logs in work.
	keep bool
}

// cleanup removes a finished cluster's directory unless asked to keep it.
func (e *env) cleanup(root string) error {
	if e.keep {
		return nil
	}
	return os.RemoveAll(root)
}

func (e *env) newCluster(ctx context.Context, sys, root string) (cluster, error) {
	switch sys {
	case "jaco":
		return newJacoCluster(ctx, e.jaco, root, 3, false)
	case "jaco-metrics":
		// jaco serving metrics, each member scraped every second
		// (scrape.go): beside jaco, what metrics cost.
		return newJacoCluster(ctx, e.jaco, root, 3, true)
	case "etcd":
		return newEtcdCluster(ctx, e.etcd, root, 3)
	case "echo":
		// No cluster: the write call answered at once (echo.go), the
		// floor under both.
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return newEchoCluster(ctx, root, []string{self, "echo-server"})
	}
	return nil, fmt.Errorf("unknown system %q", sys)
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	os.Exit(run(os.Args[1:]))
}

// run runs the command args name and returns the exit status: 0, 1 when
// a benchmark failed, 2 when the command line is wrong.
func run(args []string) int {
	root := jacoBenchCmd()
	root.SetArgs(oneDashLongFlags(root, args))
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var f failed
	if errors.As(err, &f) {
		log.Printf("jaco-bench: %v", f.error)
		return 1
	}
	log.Printf("jaco-bench: %v (see %s --help)", err, cmd.CommandPath())
	return 2
}

// failed is an error of a benchmark that ran, not of how it was called.
type failed struct{ error }

// command is how every jaco-bench command is set up: it runs fn, whose
// error is a failure (exit 1), not a usage mistake; it takes no
// positional argument; and it prints neither usage nor error itself (run
// does).
func command(use, short, long string, fn func() error) *cobra.Command {
	return &cobra.Command{
		Use:           use,
		Short:         short,
		Long:          long,
		Args:          noArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(*cobra.Command, []string) error {
			if err := fn(); err != nil {
				return failed{err}
			}
			return nil
		},
	}
}

// noArgs refuses positional arguments: every option is a flag. A word
// after jaco-bench alone names no command.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return fmt.Errorf("%s takes no arguments, only flags: %q", cmd.CommandPath(), args)
}

// clusterFlags are the root command's flags: the cluster benchmark's.
type clusterFlags struct {
	e          env
	out        string
	phases     string
	systems    string
	rates      string
	clients    string
	o          rateOpts
	fo         failoverOpts
	jo         joinOpts
	jacoTCP    bool
	reqTimeout time.Duration
	faultName  string
}

// jacoBenchCmd is jaco-bench: the cluster benchmark and the commands.
func jacoBenchCmd() *cobra.Command {
	root := clusterCmd()
	root.AddCommand(updatesCmd(), containersCmd(), nodesCmd(), connsCmd(), connsClientCmd(), echoServerCmd())
	return root
}

// clusterCmd is jaco-bench run without a command: the cluster benchmark.
func clusterCmd() *cobra.Command {
	var c clusterFlags
	cmd := command("jaco-bench",
		"Benchmarks of jaco: a cluster beside etcd, containers, updates, many nodes",
		`jaco-bench run without a command measures a three-manager jaco cluster next
to a three-member etcd on this machine, on loopback only, in three phases:

  rate      committed writes at fixed offered rates (open loop), judged by
            the pass rule of etcdctl check perf
  failover  time from the leader's SIGKILL (or SIGSTOP, --fault pause) to
            the first acknowledged write
  join      time from 'jaco node join' to VOTER

The results (markdown tables, JSON, CSV) go to --out. scripts/bench-cluster.sh
installs what it needs, builds the binaries and runs it (docs/bench/cluster.md).

Every server it starts is its own process group with SIGKILL as parent death
signal, and is stopped when the run ends or is interrupted. Every request loop
is bounded in count and time.

Every flag of every command may also be written with one dash (-work DIR), as
the scripts and the commands recorded in docs/bench write them.`,
		func() error { return runCluster(&c) })
	f := cmd.Flags()
	f.StringVar(&c.e.work, "work", "", "scratch directory for the data dirs and logs (required; removed by the caller)")
	f.StringVar(&c.e.jaco.jacod, "jacod", "bin/jacod", "jacod binary")
	f.StringVar(&c.e.jaco.jaco, "jaco", "bin/jaco", "jaco binary")
	f.StringVar(&c.e.etcd, "etcd", "etcd", "etcd binary (Debian's etcd-server)")
	f.StringVar(&c.e.perf, "perf", "", "directory for \"perf record\" profiles of the leader during the rate runs (off when empty)")
	f.BoolVar(&c.e.keep, "keep", false, "keep each cluster's data dirs and logs under --work")
	f.StringVar(&c.out, "out", "docs/bench/cluster", "where the results are written")
	f.StringVar(&c.phases, "phases", "rate,failover,join", "which benchmarks to run, in the order given: rate, failover, join")
	f.StringVar(&c.systems, "systems", "jaco,etcd", "systems for the rate and failover benchmarks: jaco, etcd, jaco-metrics (jaco serving metrics, scraped every second), echo (one process answering the write at once: the floor)")
	f.StringVar(&c.rates, "rates", "150,1000,8000,15000", "offered write rates, per second")
	f.StringVar(&c.clients, "clients", "50,200,500,1000", "writes in flight at most, per rate (etcdctl check perf's client counts)")
	f.IntVar(&c.o.conns, "conns", 8, "connections to the leader the writes are spread over")
	f.DurationVar(&c.o.duration, "duration", 60*time.Second, "how long each rate is offered")
	f.DurationVar(&c.reqTimeout, "request-timeout", 10*time.Second, "timeout of one write in the rate benchmark")
	f.DurationVar(&c.o.settle, "settle", 3*time.Second, "pause between forming a cluster and loading it; its CPU use is measured as idle")
	f.BoolVar(&c.jacoTCP, "jaco-tcp", false, "rate benchmark: write to jaco over TCP+TLS with the operator token instead of the unix socket")
	f.IntVar(&c.fo.kills, "kills", 20, "failover: leaders taken away per system")
	f.StringVar(&c.faultName, "fault", string(faultKill), "failover: how the leader is taken away: kill (SIGKILL, then a restart) or pause (SIGSTOP, then SIGCONT: no socket closes, only the election timeout finds it)")
	f.DurationVar(&c.fo.every, "attempt-every", 10*time.Millisecond, "failover: a write attempt is started this often")
	f.DurationVar(&c.fo.timeout, "attempt-timeout", 500*time.Millisecond, "failover: timeout of one write attempt")
	f.DurationVar(&c.fo.giveUp, "give-up", 30*time.Second, "failover: stop retrying after this long")
	f.DurationVar(&c.fo.settle, "failover-settle", time.Second, "failover: pause after the cluster is healthy, before the kill")
	f.IntVar(&c.jo.rounds, "joins", 5, "join rounds, each on a fresh cluster")
	f.DurationVar(&c.jo.settle, "join-settle", 5*time.Second, "join: how long m2 has been a member before m3 joins")
	f.SortFlags = false
	// A bench harness, not a shell command: no generated completion.
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

// runCluster runs the cluster benchmark's phases the flags name.
func runCluster(c *clusterFlags) error {
	if c.e.work == "" {
		return errors.New("--work is required")
	}
	e, o, fo, jo := &c.e, c.o, c.fo, c.jo
	e.jaco.tcp = c.jacoTCP
	o.timeout = c.reqTimeout
	var err error
	if o.rates, err = floats(c.rates); err != nil {
		return fmt.Errorf("--rates: %w", err)
	}
	cl, err := floats(c.clients)
	if err != nil || len(cl) != len(o.rates) {
		return fmt.Errorf("--clients: want one count per rate")
	}
	for _, n := range cl {
		o.clients = append(o.clients, int(n))
	}
	if fo.fault, err = parseFault(c.faultName); err != nil {
		return fmt.Errorf("--fault: %w", err)
	}
	o.systems = strings.Split(c.systems, ",")
	fo.systems = o.systems
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer testcluster.KillAll()

	for _, ph := range strings.Split(c.phases, ",") {
		switch ph {
		case "rate":
			rs, err := runRates(ctx, e, o)
			if werr := writeRate(c.out, rs, o); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
		case "failover":
			rs, err := runFailovers(ctx, e, fo)
			if werr := writeFailover(c.out, rs, fo); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
		case "join":
			rs, err := runJoins(ctx, e, jo)
			if werr := writeJoin(c.out, rs, jo); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown phase %q", ph)
		}
	}
	return nil
}

func floats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, fmt.Errorf("%v is not positive", v)
		}
		out = append(out, v)
	}
	return out, nil
}
