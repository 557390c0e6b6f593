package main

import (
	"math"
	"testing"
	"time"
)

// A trace row is one tenth: the cores each process used over it, from
// consecutive samples, beside the slowest write due in it.
func TestTraceRows(t *testing.T) {
	samples := []cpuSample{
		{servers: []float64{10, 5}, self: 2, idle: 100},
		{servers: []float64{10.08, 5.01}, self: 2.03, idle: 100.05},
		{servers: []float64{10.18, 5.03}, self: 2.04, idle: 100.05},
	}
	slowest := []int64{int64(450 * time.Millisecond)} // none acknowledged in the second tenth
	rows := traceRows(samples, slowest)
	if len(rows) != 2 {
		t.Fatalf("%d rows from 3 samples, want 2", len(rows))
	}
	want := []traceRow{
		{At: 0, SlowestMS: 450, Servers: []float64{0.8, 0.1}, Self: 0.3, Idle: 0.5},
		{At: 0.1, SlowestMS: 0, Servers: []float64{1, 0.2}, Self: 0.1, Idle: 0},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for i, w := range want {
		g := rows[i]
		if !near(g.At, w.At) || !near(g.SlowestMS, w.SlowestMS) || !near(g.Self, w.Self) || !near(g.Idle, w.Idle) ||
			len(g.Servers) != 2 || !near(g.Servers[0], w.Servers[0]) || !near(g.Servers[1], w.Servers[1]) {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestKeepMax(t *testing.T) {
	var s []int64
	s = keepMax(s, 2, 5)
	s = keepMax(s, 2, 3)
	s = keepMax(s, 0, 7)
	s = keepMax(s, -1, 9) // before the schedule: not kept
	if len(s) != 3 || s[0] != 7 || s[1] != 0 || s[2] != 5 {
		t.Fatalf("keepMax gave %v, want [7 0 5]", s)
	}
}

// The machine's idle time reads from /proc/stat and never runs backwards.
func TestMachineIdleSeconds(t *testing.T) {
	a, err := machineIdleSeconds()
	if err != nil {
		t.Fatal(err)
	}
	b, err := machineIdleSeconds()
	if err != nil {
		t.Fatal(err)
	}
	if a <= 0 || b < a {
		t.Fatalf("idle seconds %v then %v: want positive and not falling", a, b)
	}
}

// A run's CPU a write, process by process, is its trace's cores summed
// over the tenths and divided by the acknowledged writes.
func TestCPUByProcess(t *testing.T) {
	r := &rateResult{Acked: 1000, Cores: 2, Trace: []traceRow{
		{Servers: []float64{1, 0.5, 0.4}, Self: 0.2},
		{Servers: []float64{0.8, 0.3, 0.2}, Self: 0.4},
	}}
	p, ok := cpuByProcess(r)
	if !ok {
		t.Fatal("no figures from a run with a trace")
	}
	// 1.8 cores over a tenth is 0.18 s, 180 µs a write for 1 000 writes.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if !near(p.leader, 180) || len(p.followers) != 2 || !near(p.followers[0], 80) || !near(p.followers[1], 60) || !near(p.generator, 60) {
		t.Errorf("got %+v, want leader 180, followers 80 and 60, load generator 60", p)
	}
	if !near(p.total(), 380) {
		t.Errorf("total %.1f, want 380", p.total())
	}
	if _, ok := cpuByProcess(&rateResult{Acked: 0, Trace: r.Trace}); ok {
		t.Error("figures for a run with no acknowledged write")
	}
}
