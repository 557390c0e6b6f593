package main

// The trace of a rate run: for every tenth of a second of the schedule,
// the slowest write due in it beside the CPU each server and the load
// generator used then and what the machine left idle. A run fails the
// pass rule on its slowest write; the trace shows whether that write
// waited on a busy leader, on followers busy all at once, or on a machine
// with nothing left (docs/bench/cluster.md, "What is measured").

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// cpuSample is what the processes had used by one instant, in seconds.
type cpuSample struct {
	servers []float64 // each server's user and system time, leader first
	self    float64   // the load generator's
	idle    float64   // the machine's idle and I/O-wait time, all cores
}

// traceRow is one tenth of a second of a rate run.
type traceRow struct {
	At        float64   // seconds from the start of the schedule
	SlowestMS float64   // slowest acknowledged write due in it (0: none)
	Servers   []float64 // cores each server used, leader first
	Self      float64   // cores the load generator used
	Idle      float64   // cores the machine left idle
}

// traceCPU samples pids, this process and the machine at start and every
// tenth after it until ctx ends, then sends the samples on the returned
// channel. The caller cancels ctx and receives, which waits for the
// sampler to stop.
func traceCPU(ctx context.Context, pids []int, start time.Time) <-chan []cpuSample {
	out := make(chan []cpuSample, 1)
	go func() {
		var samples []cpuSample
		for k := 0; ; k++ {
			t := time.NewTimer(time.Until(start.Add(time.Duration(k) * tenth)))
			select {
			case <-ctx.Done():
				t.Stop()
				out <- samples
				return
			case <-t.C:
			}
			s := cpuSample{servers: make([]float64, len(pids)), self: selfCPUSeconds()}
			for i, pid := range pids {
				s.servers[i], _ = cpuSeconds(pid)
			}
			s.idle, _ = machineIdleSeconds()
			samples = append(samples, s)
		}
	}()
	return out
}

// traceRows sets each tenth's CPU (from consecutive samples) beside the
// slowest write due in it.
func traceRows(samples []cpuSample, slowest []int64) []traceRow {
	secs := tenth.Seconds()
	var rows []traceRow
	for k := 0; k+1 < len(samples); k++ {
		a, b := samples[k], samples[k+1]
		r := traceRow{At: float64(k) * secs, Self: (b.self - a.self) / secs, Idle: (b.idle - a.idle) / secs}
		if k < len(slowest) {
			r.SlowestMS = float64(slowest[k]) / float64(time.Millisecond)
		}
		for i := range a.servers {
			r.Servers = append(r.Servers, (b.servers[i]-a.servers[i])/secs)
		}
		rows = append(rows, r)
	}
	return rows
}

// machineIdleSeconds is the idle and I/O-wait time of all the machine's
// cores since boot, from /proc/stat.
func machineIdleSeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait ...
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("odd /proc/stat: %q", line)
	}
	return tickSeconds(f[4], f[5])
}
