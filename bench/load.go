package main

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// loadConfig is one open-loop run.
type loadConfig struct {
	start    time.Time     // when the first write is due
	rate     float64       // offered writes per second
	duration time.Duration // how long sends are scheduled for
	clients  int           // at most this many writes in flight
	timeout  time.Duration // per write
	// queue is how many scheduled writes may wait for a free client; a send
	// due while the queue is full is dropped (and counted), so the
	// schedule never waits for the system under test.
	queue int
	// drain bounds the wait for the queue and the writes in flight after
	// the schedule ends; what is left then is abandoned.
	drain time.Duration
}

// loadResult is what one open-loop run measured. Latencies are in
// nanoseconds, fromScheduled from the time the write was due (which
// includes any wait for a free client: no coordinated omission) and
// service from the time it was sent.
type loadResult struct {
	scheduled, dropped, abandoned, acked int
	errs                                 map[string]int
	start, lastEnd                       time.Time
	fromScheduled, service               []int64
	perSecond                            []int // acknowledgements per second since start
	// slowestByTenth is, for each tenth of a second of the schedule, the
	// slowest acknowledged write due in it (from its due time), so a
	// stall can be set beside what each process did then (traceRows).
	slowestByTenth []int64
}

// tenth is the length of a trace step.
const tenth = 100 * time.Millisecond

type job struct{ due time.Time }

// runLoad offers cfg.rate writes per second for cfg.duration through the
// writers (used round-robin by the clients) and measures every write.
func runLoad(ctx context.Context, cfg loadConfig, writers []writeFunc) *loadResult {
	n := int(cfg.rate * cfg.duration.Seconds())
	queue := make(chan job, cfg.queue)
	res := &loadResult{errs: make(map[string]int)}
	start := cfg.start
	res.start = start
	stopAt := start.Add(cfg.duration + cfg.drain)
	wctx, cancel := context.WithDeadline(ctx, stopAt)
	defer cancel()

	type partial struct {
		fromScheduled, service []int64
		ends                   []int64 // since start, for perSecond
		slowestByTenth         []int64
		abandoned              int
		errs                   map[string]int
		lastEnd                time.Time
	}
	parts := make([]*partial, cfg.clients)
	var wg sync.WaitGroup
	for i := range cfg.clients {
		p := &partial{errs: make(map[string]int)}
		parts[i] = p
		w := writers[i%len(writers)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if wctx.Err() != nil {
					p.abandoned++
					continue
				}
				sent := time.Now()
				rctx, rcancel := context.WithTimeout(wctx, cfg.timeout)
				err := w(rctx)
				rcancel()
				end := time.Now()
				if err != nil {
					if wctx.Err() != nil {
						p.abandoned++
					} else {
						p.errs[errWord(err)]++
					}
					continue
				}
				lat := int64(end.Sub(j.due))
				p.fromScheduled = append(p.fromScheduled, lat)
				p.slowestByTenth = keepMax(p.slowestByTenth, int(j.due.Sub(start)/tenth), lat)
				p.service = append(p.service, int64(end.Sub(sent)))
				p.ends = append(p.ends, int64(end.Sub(start)))
				p.lastEnd = end
			}
		}()
	}

	// The schedule: write i is due at start + i/rate. Sends due together
	// (the sleep's granularity is about a millisecond) go out together.
	interval := float64(time.Second) / cfg.rate
schedule:
	for i := range n {
		due := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(due); d > 200*time.Microsecond {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				break schedule
			}
		}
		res.scheduled++
		select {
		case queue <- job{due: due}:
		default:
			res.dropped++
		}
	}
	close(queue)
	wg.Wait()

	for _, p := range parts {
		res.fromScheduled = append(res.fromScheduled, p.fromScheduled...)
		res.service = append(res.service, p.service...)
		res.abandoned += p.abandoned
		for k, v := range p.errs {
			res.errs[k] += v
		}
		if p.lastEnd.After(res.lastEnd) {
			res.lastEnd = p.lastEnd
		}
		for i, l := range p.slowestByTenth {
			res.slowestByTenth = keepMax(res.slowestByTenth, i, l)
		}
		for _, e := range p.ends {
			s := int(e / int64(time.Second))
			for len(res.perSecond) <= s {
				res.perSecond = append(res.perSecond, 0)
			}
			res.perSecond[s]++
		}
	}
	res.acked = len(res.service)
	return res
}

// keepMax raises s[i] to v, growing s as needed.
func keepMax(s []int64, i int, v int64) []int64 {
	if i < 0 {
		return s
	}
	for len(s) <= i {
		s = append(s, 0)
	}
	s[i] = max(s[i], v)
	return s
}

// latStats summarizes latencies, in milliseconds.
type latStats struct {
	N      int     `json:"n"`
	P50    float64 `json:"p50_ms"`
	P90    float64 `json:"p90_ms"`
	P99    float64 `json:"p99_ms"`
	P999   float64 `json:"p999_ms"`
	Max    float64 `json:"max_ms"`
	Mean   float64 `json:"mean_ms"`
	Stddev float64 `json:"stddev_ms"`
}

func summarize(ns []int64) latStats {
	if len(ns) == 0 {
		return latStats{}
	}
	s := slices.Clone(ns)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(len(s))
	var sq float64
	for _, v := range s {
		d := float64(v) - mean
		sq += d * d
	}
	ms := func(v float64) float64 { return v / 1e6 }
	return latStats{
		N:      len(s),
		P50:    ms(float64(percentile(s, 0.50))),
		P90:    ms(float64(percentile(s, 0.90))),
		P99:    ms(float64(percentile(s, 0.99))),
		P999:   ms(float64(percentile(s, 0.999))),
		Max:    ms(float64(s[len(s)-1])),
		Mean:   ms(mean),
		Stddev: ms(math.Sqrt(sq / float64(len(s)))),
	}
}

// percentile is the nearest-rank percentile of sorted values.
func percentile[T int64 | float64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
