package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/linearcheck"
)

// Event is one episode of the schedule: a fault injected, held, healed.
// Times are since the start of the history.
type Event struct {
	Episode   int
	Nemesis   string
	What      string
	Inject    time.Duration
	Heal      time.Duration
	Recovered time.Duration
	// Unavailable is the longest time within the episode (from the
	// injection to the next one, or the end) in which no write was
	// acknowledged anywhere in the cluster.
	Unavailable time.Duration
}

func (e Event) String() string {
	return fmt.Sprintf("#%d %s (%s) at %s, healed %s, recovered %s; writes stopped for %s",
		e.Episode, e.Nemesis, e.What, round(e.Inject), round(e.Heal), round(e.Recovered), round(e.Unavailable))
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// WorkloadStats counts one workload's operations and holds its check.
type WorkloadStats struct {
	Workload                  string
	Ops, OK, Refused, Unknown int
	Result                    linearcheck.Result
	// Lost counts acknowledged adds missing at the end (set only).
	Lost int
}

// Report is what a run did and found.
type Report struct {
	Seed      uint64
	Nemesis   string
	Managers  int
	Dir       string
	Events    []Event
	Workloads []WorkloadStats
	// Problems are failures outside the histories: a daemon that crashed,
	// a cluster that did not recover after the fault healed.
	Problems []string
}

// Failed reports whether the run found anything wrong.
func (r *Report) Failed() bool {
	if len(r.Problems) > 0 || len(r.Workloads) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Workloads, func(w WorkloadStats) bool { return !w.Result.OK() })
}

// Schedule is the nemesis schedule, one episode a line: with the seed, what
// a failure prints so the run can be replayed.
func (r *Report) Schedule() string {
	var b strings.Builder
	for _, e := range r.Events {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return b.String()
}

func (r *Report) String() string {
	var b strings.Builder
	verdict := "ok"
	if r.Failed() {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "chaos run seed=%d nemesis=%s managers=%d: %s (dir %s)\nschedule:\n%s",
		r.Seed, r.Nemesis, r.Managers, verdict, r.Dir, r.Schedule())
	for _, w := range r.Workloads {
		fmt.Fprintf(&b, "%s: %d operations (%d ok, %d refused, %d unknown), %d lost\n  %s\n",
			w.Workload, w.Ops, w.OK, w.Refused, w.Unknown, w.Lost, strings.ReplaceAll(w.Result.String(), "\n", "\n  "))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	return b.String()
}

// Unavailability returns the median and the longest of the episodes'
// write stops.
func (r *Report) Unavailability() (p50, longest time.Duration) {
	var ds []time.Duration
	for _, e := range r.Events {
		ds = append(ds, e.Unavailable)
	}
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[(len(ds)-1)/2], ds[len(ds)-1]
}

// unavailability sets each event's Unavailable from the acknowledged
// writes of both workloads in ops; end is when the clients stopped.
func (r *Report) unavailability(ops []linearcheck.Op, end time.Duration) {
	var acked []time.Duration
	for _, op := range ops {
		if op.Outcome != linearcheck.OK {
			continue
		}
		switch in := op.Input.(type) {
		case linearcheck.SetAdd:
		case linearcheck.RegisterInput:
			if !in.Write {
				continue
			}
		default:
			continue
		}
		acked = append(acked, time.Duration(op.Return))
	}
	slices.Sort(acked)
	for i := range r.Events {
		from, to := r.Events[i].Inject, end
		if i+1 < len(r.Events) {
			to = r.Events[i+1].Inject
		}
		r.Events[i].Unavailable = longestGap(acked, from, to)
	}
}

// longestGap is the longest part of [from, to) holding none of the sorted
// times in acked.
func longestGap(acked []time.Duration, from, to time.Duration) time.Duration {
	last, gap := from, time.Duration(0)
	i, _ := slices.BinarySearch(acked, from)
	for ; i < len(acked) && acked[i] < to; i++ {
		gap = max(gap, acked[i]-last)
		last = acked[i]
	}
	return max(gap, to-last)
}

// check reads the set through every member and checks both histories.
func (r *Report) check(ctx context.Context, c *cluster, ops []linearcheck.Op, cfg Config) error {
	label := fmt.Sprintf("seed=%d nemesis=%s", cfg.Seed, cfg.Nemesis)
	opts := linearcheck.Options{Label: label, Dir: cfg.Dir, Timeout: cfg.CheckTimeout}

	reg, err := linearcheck.CheckRegisters(ops, opts)
	if err != nil {
		return err
	}
	r.Workloads = append(r.Workloads, stats(ops, linearcheck.RegisterWorkload, reg, 0))

	// Every member must hold the same set; the first that differs from
	// the history is the one reported.
	var set linearcheck.Result
	lost := 0
	for i, m := range c.members {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		final, err := readSet(rctx, api.NewControlServiceClient(c.conns[i]))
		cancel()
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("read the set through %s: %v", m.name, err))
			continue
		}
		o := opts
		o.Label = label + " via=" + m.name
		res, err := linearcheck.CheckSet(ops, final, o)
		if err != nil {
			return err
		}
		if i == 0 || (set.OK() && !res.OK()) {
			set = res
			lost = 0
			for _, p := range res.Problems {
				if strings.HasPrefix(p, "lost:") {
					lost++
				}
			}
		}
	}
	r.Workloads = append(r.Workloads, stats(ops, linearcheck.SetWorkload, set, lost))
	return nil
}

// stats counts the operations of one workload.
func stats(ops []linearcheck.Op, workload string, res linearcheck.Result, lost int) WorkloadStats {
	w := WorkloadStats{Workload: workload, Result: res, Lost: lost}
	for _, op := range ops {
		_, isSet := op.Input.(linearcheck.SetAdd)
		if isSet != (workload == linearcheck.SetWorkload) {
			continue
		}
		w.Ops++
		switch op.Outcome {
		case linearcheck.OK:
			w.OK++
		case linearcheck.Refused:
			w.Refused++
		default:
			w.Unknown++
		}
	}
	return w
}
