package raft

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// BenchmarkReadConsistency measures, on a group of three voters in this
// process (messages in memory, the WAL fsynced on this machine's disk),
// what a read costs at each consistency next to a write, one at a time:
//
//   - local: reading the member's store, no coordination (the floor);
//   - linearizable-leader / linearizable-follower: ReadBarrier on that
//     member, then the read;
//   - write: one Propose on the leader, returned once applied.
//
// Reported: p50-µs and p99-µs of one operation, and for the reads their
// p50 next to the write's (p50/write-p50), measured in the same run.
func BenchmarkReadConsistency(b *testing.B) {
	net := newMemNet(b)
	nodes, kvs := threeVoters(b, net)
	lead := leaderOf(b, nodes, -1)
	follower := (lead + 1) % 3
	ctx := context.Background()
	for i := range 100 { // a store with something in it
		if err := nodes[lead].Propose(ctx, rafttest.Put(fmt.Sprintf("k%03d", i), "v")); err != nil {
			b.Fatal(err)
		}
	}
	ops := []struct {
		name string
		op   func(i int) error
	}{
		{"local", func(int) error { kvs[follower].Get("k042"); return nil }},
		{"linearizable-leader", func(int) error {
			err := nodes[lead].ReadBarrier(ctx)
			kvs[lead].Get("k042")
			return err
		}},
		{"linearizable-follower", func(int) error {
			err := nodes[follower].ReadBarrier(ctx)
			kvs[follower].Get("k042")
			return err
		}},
		{"write", func(i int) error { return nodes[lead].Propose(ctx, rafttest.Put(fmt.Sprintf("w%09d", i), "v")) }},
	}
	var writeP50 time.Duration
	for _, o := range slices.Backward(ops) { // the write first: the reads report against it
		b.Run(o.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := o.op(i); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
			if o.name == "write" {
				writeP50 = p50
			}
			b.ReportMetric(float64(p50)/float64(time.Microsecond), "p50-µs")
			b.ReportMetric(float64(p99)/float64(time.Microsecond), "p99-µs")
			if writeP50 > 0 {
				b.ReportMetric(float64(p50)/float64(writeP50), "p50/write-p50")
			}
		})
	}
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
