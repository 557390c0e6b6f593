package chaos

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/linearcheck"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// Binaries are the programs under test.
type Binaries struct {
	Jacod, Jaco string
}

// Random is the Config.Nemesis that picks a nemesis at random (from the
// seed) for every episode.
const Random = "random"

// Config is one run.
type Config struct {
	Binaries
	// Nemesis is a name from Nemeses, or Random.
	Nemesis string
	// Managers is how many managers the cluster has: 3 (also when 0) or 5.
	Managers int
	Seed     uint64
	// Duration is how long faults are injected; the last episode may end
	// a few seconds later, and forming and checking come on top.
	Duration time.Duration
	// Dir holds the managers' data dirs and logs and, on failure, the
	// evidence. It must exist.
	Dir string
	// CheckTimeout bounds the linearizability search (0: linearcheck's
	// default).
	CheckTimeout time.Duration
	Log          *slog.Logger
	// LocalReads makes the register workload read from the answering
	// manager's store instead of linearizably: reads a cut-off manager
	// answers stale. Only for the test that shows the runner catches
	// them.
	LocalReads bool
}

// Timing of the schedule; hold and quiet are drawn from the seed.
const (
	warmup       = 2 * time.Second
	holdMin      = 3 * time.Second
	holdMax      = 6 * time.Second
	quietMin     = 2 * time.Second
	quietMax     = 4 * time.Second
	recoverLimit = 60 * time.Second
)

// waitPoll is how often the runner's waits (waitfor.Until) try their
// condition again.
const waitPoll = 50 * time.Millisecond

// Workload sizes: per manager, registerClients register clients and one
// set client; registerKeysPerEpisode fresh register keys each episode.
const (
	registerClients        = 2
	registerKeysPerEpisode = 3
	runnerClient           = 1000 // the runner's creates in the history
)

// Run forms a cluster, runs both workloads under the configured nemesis,
// heals, and checks the histories. The error is about the harness (a
// cluster that could not be formed, a fault that could not be injected);
// what the cluster did wrong is in the Report (Report.Failed).
func Run(ctx context.Context, cfg Config) (_ *Report, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	rep := &Report{Seed: cfg.Seed, Nemesis: cfg.Nemesis, Managers: cmp.Or(cfg.Managers, 3), Dir: cfg.Dir}
	pick, err := picker(cfg.Nemesis)
	if err != nil {
		return nil, err
	}
	// One stream for the schedule and one per client, all from the seed.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	if rep.Managers != 3 && rep.Managers != 5 {
		return nil, fmt.Errorf("%d managers: a run has 3 or 5", rep.Managers)
	}
	c, err := formCluster(ctx, cfg.Binaries, cfg.Dir, rep.Managers, nemesisSetup(cfg.Nemesis))
	if err != nil {
		return nil, err
	}
	defer func() {
		cerr := c.close(context.WithoutCancel(ctx))
		if cerr != nil {
			rep.Problems = append(rep.Problems, "at the end: "+cerr.Error())
		}
		rep.Problems = append(rep.Problems, raceReports(c)...)
	}()

	rec := linearcheck.NewRecorder()
	// The recorder's clock and the schedule's start together: schedule
	// times and operation times are on one timeline, give or take the
	// nanoseconds between these two lines.
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	keys := &registerKeys{}
	if err := rotateKeys(ctx, c, rec, keys, 0); err != nil {
		return nil, err
	}

	stop := startClients(ctx, c, cfg, rec, keys)
	defer stop()

	if err := sleep(ctx, warmup); err != nil {
		return nil, err
	}
	for episode := 1; since() < cfg.Duration; episode++ {
		if err := rotateKeys(ctx, c, rec, keys, episode); err != nil {
			return nil, err
		}
		ev, problem, err := runEpisode(ctx, c, cfg, rng, pick(rng), episode, since)
		if err != nil {
			return nil, err
		}
		rep.Events = append(rep.Events, ev)
		if problem != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("episode %d (%s): %s", episode, ev.Nemesis, problem))
			break
		}
		if err := sleep(ctx, between(rng, quietMin, quietMax)); err != nil {
			return nil, err
		}
	}
	stop()
	end := since()
	ops := rec.Ops()
	rep.unavailability(ops, end)

	if err := c.waitHealthy(ctx, recoverLimit); err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("the cluster is not healthy at the end: %v", err))
		return rep, nil
	}
	return rep, rep.check(ctx, c, ops, cfg)
}

// runEpisode injects nemesis n, holds the fault, heals it and waits for
// the cluster to recover. A problem is something the cluster did wrong
// (it did not recover, a daemon crashed, the heal found it misbehaving);
// the error is about the harness.
func runEpisode(ctx context.Context, c *cluster, cfg Config, rng *rand.Rand, n Nemesis, episode int, since func() time.Duration) (ev Event, problem string, err error) {
	ev = Event{Episode: episode, Nemesis: n.Name, Inject: since()}
	cfg.Log.Info("chaos: inject", "episode", episode, "nemesis", n.Name)
	f, err := n.inject(ctx, c, rng)
	if err != nil {
		return ev, "", fmt.Errorf("episode %d: inject %s: %w", episode, n.Name, err)
	}
	ev.What = f.what
	hold := f.hold
	if hold == 0 {
		hold = between(rng, holdMin, holdMax)
	}
	if f.wait != nil {
		err = f.wait(ctx)
	} else {
		err = sleep(ctx, hold)
	}
	if err != nil {
		return ev, "", fmt.Errorf("episode %d: hold %s: %w", episode, n.Name, err)
	}
	ev.Heal = since()
	if err := f.heal(ctx); err != nil {
		return ev, "heal: " + err.Error(), nil
	}
	if f.after != nil {
		ev.What += f.after()
	}
	if err := c.waitHealthy(ctx, recoverLimit); err != nil {
		return ev, "the cluster did not recover: " + err.Error(), nil
	}
	ev.Recovered = since()
	cfg.Log.Info("chaos: healed", "episode", episode, "nemesis", n.Name, "what", ev.What, "recovered_after", ev.Recovered-ev.Heal)
	if f.check != nil {
		if err := f.check(); err != nil {
			return ev, err.Error(), nil
		}
	}
	if err := c.crashes(); err != nil {
		return ev, err.Error(), nil
	}
	return ev, "", nil
}

// picker returns how each episode chooses its nemesis.
func picker(name string) (func(*rand.Rand) Nemesis, error) {
	if name == Random {
		return func(rng *rand.Rand) Nemesis { return Nemeses[rng.IntN(len(Nemeses))] }, nil
	}
	n, err := nemesisByName(name)
	if err != nil {
		return nil, err
	}
	return func(*rand.Rand) Nemesis { return n }, nil
}

// rotateKeys creates the register keys of an episode, each through any
// member that takes it, and hands them to the clients.
func rotateKeys(ctx context.Context, c *cluster, rec *linearcheck.Recorder, keys *registerKeys, episode int) error {
	names := make([]string, 0, registerKeysPerEpisode)
	for k := range registerKeysPerEpisode {
		names = append(names, fmt.Sprintf("reg-%d-%d", episode, k))
	}
	for _, name := range names {
		i := 0
		err := waitfor.Until(ctx, recoverLimit, waitPoll, func(context.Context) error {
			control := api.NewControlServiceClient(c.conns[i%len(c.conns)])
			i++
			octx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			err := createRegister(octx, control, rec, runnerClient, name)
			if status.Code(err) == codes.AlreadyExists {
				return nil // an earlier try that answered Unknown did create it
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("create register %s of episode %d: %w", name, episode, err)
		}
	}
	keys.names.Store(&names)
	return nil
}

// between draws a duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// raceReports names the members whose log holds a data race report (a
// daemon built with -race).
func raceReports(c *cluster) []string {
	var out []string
	for _, m := range c.members {
		if b, err := os.ReadFile(m.logPath); err == nil && raceReport.Match(b) {
			out = append(out, fmt.Sprintf("jacod %s reported a data race (log %s)", m.name, filepath.Base(m.logPath)))
		}
	}
	return out
}
