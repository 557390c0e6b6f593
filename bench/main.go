// Command jaco-bench measures a three-manager jaco cluster next to a
// three-member etcd on the same machine, on loopback only: committed writes
// at fixed offered rates (open loop), time from a leader's SIGKILL (or
// SIGSTOP) to the first acknowledged write, and time from `jaco node
// join` to VOTER.
// scripts/bench-cluster.sh installs what it needs and runs it; the results
// go to docs/bench/cluster/ (see docs/bench/cluster.md). `jaco-bench
// containers` measures create → running of replicas under containerd
// instead (containers.go, scripts/bench-containers.sh,
// docs/bench/containers.md). `jaco-bench nodes` simulates worker nodes
// against a real jacod, for the large-store measurement (nodes.go,
// scripts/bench-largestore.sh).
//
// Every server it starts is its own process group with SIGKILL as parent
// death signal, and is stopped when the run ends or is interrupted. Every
// request loop is bounded in count and time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	if err := run(); err != nil {
		log.Printf("jaco-bench: %v", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) > 1 && os.Args[1] == "updates" {
		return runUpdates(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "containers" {
		return runContainers(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "nodes" {
		return runNodes(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "conns" {
		return runConns(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "conns-client" {
		return runConnsClient(os.Args[2:])
	}
	if len(os.Args) > 1 && os.Args[1] == "echo-server" {
		return runEchoServer(os.Args[2:])
	}
	var (
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
	)
	flag.StringVar(&e.work, "work", "", "scratch directory for the data dirs and logs (required; removed by the caller)")
	flag.StringVar(&e.jaco.jacod, "jacod", "bin/jacod", "jacod binary")
	flag.StringVar(&e.jaco.jaco, "jaco", "bin/jaco", "jaco binary")
	flag.StringVar(&e.etcd, "etcd", "etcd", "etcd binary (Debian's etcd-server)")
	flag.StringVar(&e.perf, "perf", "", "directory for `perf record` profiles of the leader during the rate runs (off when empty)")
	flag.BoolVar(&e.keep, "keep", false, "keep each cluster's data dirs and logs under -work")
	flag.StringVar(&out, "out", "docs/bench/cluster", "where the results are written")
	flag.StringVar(&phases, "phases", "rate,failover,join", "which benchmarks to run")
	flag.StringVar(&systems, "systems", "jaco,etcd", "systems for the rate and failover benchmarks: jaco, etcd, jaco-metrics (jaco serving metrics, scraped every second), echo (one process answering the write at once: the floor)")
	flag.StringVar(&rates, "rates", "150,1000,8000,15000", "offered write rates, per second")
	flag.StringVar(&clients, "clients", "50,200,500,1000", "writes in flight at most, per rate (etcdctl check perf's client counts)")
	flag.IntVar(&o.conns, "conns", 8, "connections to the leader the writes are spread over")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long each rate is offered")
	flag.DurationVar(&reqTimeout, "request-timeout", 10*time.Second, "timeout of one write in the rate benchmark")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "pause between forming a cluster and loading it; its CPU use is measured as idle")
	flag.BoolVar(&jacoTCP, "jaco-tcp", false, "rate benchmark: write to jaco over TCP+TLS with the operator token instead of the unix socket")
	flag.IntVar(&fo.kills, "kills", 20, "failover: leaders taken away per system")
	flag.StringVar(&faultName, "fault", string(faultKill), "failover: how the leader is taken away: kill (SIGKILL, then a restart) or pause (SIGSTOP, then SIGCONT: no socket closes, only the election timeout finds it)")
	flag.DurationVar(&fo.every, "attempt-every", 10*time.Millisecond, "failover: a write attempt is started this often")
	flag.DurationVar(&fo.timeout, "attempt-timeout", 500*time.Millisecond, "failover: timeout of one write attempt")
	flag.DurationVar(&fo.giveUp, "give-up", 30*time.Second, "failover: stop retrying after this long")
	flag.DurationVar(&fo.settle, "failover-settle", time.Second, "failover: pause after the cluster is healthy, before the kill")
	flag.IntVar(&jo.rounds, "joins", 5, "join rounds, each on a fresh cluster")
	flag.DurationVar(&jo.settle, "join-settle", 5*time.Second, "join: how long m2 has been a member before m3 joins")
	flag.Parse()
	if e.work == "" {
		return errors.New("-work is required")
	}
	e.jaco.tcp = jacoTCP
	o.timeout = reqTimeout
	var err error
	if o.rates, err = floats(rates); err != nil {
		return fmt.Errorf("-rates: %w", err)
	}
	cl, err := floats(clients)
	if err != nil || len(cl) != len(o.rates) {
		return fmt.Errorf("-clients: want one count per rate")
	}
	for _, c := range cl {
		o.clients = append(o.clients, int(c))
	}
	if fo.fault, err = parseFault(faultName); err != nil {
		return fmt.Errorf("-fault: %w", err)
	}
	o.systems = strings.Split(systems, ",")
	fo.systems = o.systems
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer stopAll()

	for _, ph := range strings.Split(phases, ",") {
		switch ph {
		case "rate":
			rs, err := runRates(ctx, &e, o)
			if werr := writeRate(out, rs, o); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
		case "failover":
			rs, err := runFailovers(ctx, &e, fo)
			if werr := writeFailover(out, rs, fo); werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
		case "join":
			rs, err := runJoins(ctx, &e, jo)
			if werr := writeJoin(out, rs, jo); werr != nil {
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
