// Package gcpace paces Go's garbage collector for a process whose live
// heap is small next to what it allocates: a manager holding a store of
// tens of megabytes while it commits thousands of writes a second.
//
// With the default GOGC=100 a collection starts each time the heap grows
// by as much as is live, so a 30 MiB store under a steady write load is
// collected several times a second, and a quarter of the leader's CPU went
// to marking (docs/adr/0032). A Pacer gives the heap at least Headroom to
// grow into, and never less than GOGC=100 would: the percent it sets is
// Headroom as a share of what the runtime applies the percent to, between
// 100 and MaxPercent. A large store thus keeps the default and its memory
// bound; only small ones trade some megabytes for CPU.
//
// An operator's GOGC in the environment wins: the Pacer then does nothing.
package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults of a manager's Pacer.
const (
	DefaultHeadroom   = 512 << 20
	DefaultMaxPercent = 400
	// defaultEvery is how often the live heap is read: it changes as the
	// store does, slowly next to a collection every few hundred
	// milliseconds.
	defaultEvery = time.Second
)

// The runtime's next collection is due when the heap reaches the live
// heap plus GOGC percent of the live heap and the GC roots: the stacks
// and globals it scanned. A manager with thousands of nodes has a
// goroutine stack or five for each; left out, they stretched a 512 MiB
// headroom to 650 MB (docs/bench/largestore.md).
var samples = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Percent is the GOGC percent that gives a heap of live bytes, beside
// roots bytes of scanned stacks and globals, headroom to grow into,
// between 100 and maxPercent.
func Percent(live, roots, headroom uint64, maxPercent int) int {
	if live+roots == 0 {
		return maxPercent
	}
	p := headroom * 100 / (live + roots)
	return int(min(max(p, 100), uint64(maxPercent)))
}

// Run sets the collector's percent from the live heap every second until
// ctx ends, then puts back the percent it found. It returns at once when
// GOGC is set in the environment.
func Run(ctx context.Context, headroom uint64, maxPercent int) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := make([]metrics.Sample, len(samples))
	for i, name := range samples {
		sample[i].Name = name
	}
	set := -1
	restore := -1
	defer func() {
		if restore >= 0 {
			debug.SetGCPercent(restore)
		}
	}()
	tick := time.NewTicker(defaultEvery)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			var roots uint64
			for _, s := range sample[1:] {
				if s.Value.Kind() == metrics.KindUint64 {
					roots += s.Value.Uint64()
				}
			}
			if p := Percent(sample[0].Value.Uint64(), roots, headroom, maxPercent); p != set {
				prev := debug.SetGCPercent(p)
				if restore < 0 {
					restore = prev
				}
				set = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
