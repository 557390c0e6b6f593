package main

// `jaco-bench nodes` simulates worker nodes against a real jacod, so that
// a manager can be measured with thousands of nodes on one machine
// (scripts/bench-largestore.sh, docs/bench/largestore.md). Each simulated
// node is what the manager sees of a worker: its own key and certificate
// from a token join, its own mutual-TLS connection to the dispatcher with
// the agent's session, heartbeats, assignments and status reports, and the
// node's role check on the same connection. Nothing runs: an assigned
// replica is reported RUNNING at once, one told to stop is reported shut
// down.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

// simOpts configure a simulator.
type simOpts struct {
	// manager is the manager's TCP address (host:port), on loopback.
	manager string
	// socket is the manager's local socket, through which a join token is
	// minted for each node that has not joined yet (tokens are single use).
	socket string
	count  int
	// state holds one directory per node: its key, certificate and CA.
	state string
	// joins is how many joins run at once.
	joins int
	// prefix names the nodes: prefix-00001 and on.
	prefix string
	// cpus and memory are what each node describes (nano CPUs, bytes).
	cpus, memory int64
	// roleCheck is how often each node asks for its role, as jacod does
	// (--role-check-interval); 0 never.
	roleCheck time.Duration
	// report is how often the simulator logs its counts; 0 never.
	report time.Duration
}

func (o *simOpts) fillDefaults() {
	if o.joins <= 0 {
		o.joins = 32
	}
	if o.prefix == "" {
		o.prefix = "sim"
	}
}

func nodesCmd() *cobra.Command {
	var o simOpts
	var cpus int
	var memGiB int64
	cmd := command("nodes",
		"Simulate worker nodes against a real jacod",
		`jaco-bench nodes simulates --count worker nodes against a real jacod, so
that a manager can be measured with thousands of nodes on one machine. Each
simulated node is what the manager sees of a worker: its own key and
certificate from a token join, its own mutual-TLS connection to the
dispatcher with the agent's session, heartbeats, assignments and status
reports, and the node's role check on the same connection. Nothing runs: an
assigned replica is reported RUNNING at once, one told to stop is reported
shut down.

It runs until interrupted, logging its counts every --report. A second run
with the same --state reconnects the same nodes. scripts/bench-largestore.sh
runs it (docs/bench/largestore.md).`,
		func() error {
			o.cpus, o.memory = int64(cpus)*1e9, memGiB<<30
			return runNodes(o)
		})
	f := cmd.Flags()
	f.StringVar(&o.manager, "manager", "127.0.0.1:7000", "the manager's TCP address (loopback)")
	f.StringVar(&o.socket, "socket", "", "the manager's local socket (DATA_DIR/jaco.sock): each node not joined yet gets its join token through it")
	f.IntVar(&o.count, "count", 100, "how many nodes to simulate")
	f.StringVar(&o.state, "state", "", "directory for the nodes' keys and certificates; a second run with it reconnects the same nodes (required)")
	f.IntVar(&o.joins, "joins", 32, "joins at once")
	f.StringVar(&o.prefix, "prefix", "sim", "node names are PREFIX-00001 and on")
	f.IntVar(&cpus, "cpus", 64, "CPUs each node describes")
	f.Int64Var(&memGiB, "memory-gib", 256, "memory each node describes, GiB")
	f.DurationVar(&o.roleCheck, "role-check", 2*time.Second, "each node's role check (an empty RenewCertificate on its session's connection), as jacod's --role-check-interval; 0 off")
	f.DurationVar(&o.report, "report", 10*time.Second, "how often to log the counts")
	f.SortFlags = false
	return cmd
}

func runNodes(o simOpts) error {
	if o.state == "" {
		return errors.New("nodes: --state is required")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := raiseFileLimit(log); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sim := newSimulator(o, log)
	err := sim.run(ctx)
	if errors.Is(err, context.Canceled) {
		log.Info("stopped", "nodes", o.count)
		return nil
	}
	return err
}

// raiseFileLimit lifts the soft limit on open files to the hard one: each
// node holds one or two TLS connections.
func raiseFileLimit(log *slog.Logger) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open files limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("raise the open files limit to %d: %w", lim.Max, err)
		}
	}
	log.Info("open files limit", "limit", lim.Cur)
	return nil
}

// simulator runs the simulated nodes.
type simulator struct {
	o   simOpts
	log *slog.Logger
	// Counts, for the periodic report and the tests.
	joined, sessions, running, reports, sessionFailures atomic.Int64

	mu    sync.Mutex
	nodes []*simNode
}

func newSimulator(o simOpts, log *slog.Logger) *simulator {
	o.fillDefaults()
	return &simulator{o: o, log: log}
}

// nodeIDs are the ids of the nodes running now, by name.
func (s *simulator) nodeIDs() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make(map[string]string, len(s.nodes))
	for _, n := range s.nodes {
		ids[n.name] = n.id
	}
	return ids
}

// run loads or joins every node and runs each until ctx ends. A join that
// fails ends the run; a session that fails is opened again, as the agent
// does.
func (s *simulator) run(ctx context.Context) error {
	if err := os.MkdirAll(s.o.state, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	joiner, err := newJoiner(s.o)
	if err != nil {
		return err
	}
	defer joiner.close()

	// The nodes run in their own group: they end only with ctx.
	var nodes sync.WaitGroup
	defer nodes.Wait()
	nodesCtx, stopNodes := context.WithCancel(ctx)
	defer stopNodes()
	if s.o.report > 0 {
		nodes.Go(func() { s.reportLoop(nodesCtx) })
	}

	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.o.joins)
	fresh := atomic.Int64{}
	for i := 1; i <= s.o.count; i++ {
		name := fmt.Sprintf("%s-%05d", s.o.prefix, i)
		dir := filepath.Join(s.o.state, name)
		g.Go(func() error {
			id, joinedNow, err := joiner.identity(gctx, name, dir, 20000+i)
			if err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
			if joinedNow {
				fresh.Add(1)
			}
			n, err := newSimNode(s, name, id)
			if err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
			s.joined.Add(1)
			s.mu.Lock()
			s.nodes = append(s.nodes, n)
			s.mu.Unlock()
			nodes.Go(func() { n.run(nodesCtx) })
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		stopNodes()
		return err
	}
	s.log.Info("every node has its identity", "nodes", s.o.count, "joined_now", fresh.Load(),
		"took", time.Since(start).Round(time.Millisecond))
	<-ctx.Done()
	return ctx.Err()
}

// reportLoop logs the counts every report interval.
func (s *simulator) reportLoop(ctx context.Context) {
	t := time.NewTicker(s.o.report)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.log.Info("nodes", "joined", s.joined.Load(), "in_session", s.sessions.Load(),
			"replicas_running", s.running.Load(), "status_reports", s.reports.Load(),
			"session_failures", s.sessionFailures.Load())
	}
}
