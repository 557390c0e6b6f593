package integration

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCARotation times `jaco cluster ca --rotate` from its start to
// the end of the drop phase, on three managers and workers making the
// node count of each sub-benchmark (loopback, the default 2 s role-check
// interval), reported as s/rotation. Run with:
//
//	go test -run '^$' -bench CARotation -benchtime 3x ./integration/
func BenchmarkCARotation(b *testing.B) {
	for _, nodes := range []int{4, 10} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			ms := formManagers(b, 3)
			for i := 3; i < nodes; i++ {
				w := startDaemon(b, fmt.Sprintf("w%d", i))
				wantOK(b, w.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("worker")))
			}
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				r := wantOK(b, ms[0].jaco("cluster", "ca", "--rotate", "--quiet"))
				if r.stdout != "" {
					b.Fatalf("cluster ca --rotate --quiet printed %q", r.stdout)
				}
				total += time.Since(start)
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/rotation")
		})
	}
}
