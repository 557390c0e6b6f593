package store

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// BenchmarkCollectorMark times full collections with a store of 300 000
// join tokens live (the cluster benchmark's writes, as Issue makes them;
// a manager's collector marks all of it every cycle), and, in the same
// run, the reference: the same tokens decoded, in one slice, without the
// store (what a table of bare pointers held besides its trees, as join
// tokens were kept before docs/adr/0055). Reported: the median collection
// of each (store-ms, decoded-ms), their ratio, and the heap each keeps
// live. ns/op is meaningless: each iteration is one collection of each.
func BenchmarkCollectorMark(b *testing.B) {
	const tokens = 300_000
	s := New(nil) // closed and dropped before the reference
	now := time.Now()
	for batch := range tokens / 1000 {
		r := &api.InternalRaftRequest{}
		for i := range 1000 {
			n := batch*1000 + i
			created := timestamppb.New(now.Add(time.Duration(n) * time.Microsecond))
			hash := sha256.Sum256(fmt.Appendf(nil, "secret-%d", n))
			r.Actions = append(r.Actions, act(b, create, &api.JoinToken{
				Id:        fmt.Sprintf("%025x", n),
				Meta:      &api.Meta{CreatedAt: created, UpdatedAt: created},
				Hash:      hash[:],
				Role:      api.NodeRole_NODE_ROLE_WORKER,
				ExpiresAt: timestamppb.New(now.Add(time.Hour)),
			}))
		}
		if err := s.Apply(uint64(batch+1), r); err != nil {
			b.Fatal(err)
		}
	}
	collect := func(n int) (median time.Duration, live uint64) {
		runtime.GC()
		times := make([]time.Duration, n)
		for i := range times {
			start := time.Now()
			runtime.GC()
			times[i] = time.Since(start)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		slices.Sort(times)
		return times[n/2], ms.HeapAlloc
	}
	b.ResetTimer()
	storeGC, storeHeap := collect(b.N)
	b.StopTimer()

	var decoded []*api.JoinToken
	s.View(func(tx ReadTx) { decoded = tx.ListJoinTokens() })
	if len(decoded) != tokens {
		b.Fatalf("%d tokens stored, want %d", len(decoded), tokens)
	}
	s.Close()
	s = nil // from here the decoded tokens alone are live
	b.StartTimer()
	refGC, refHeap := collect(b.N)
	b.StopTimer()
	runtime.KeepAlive(decoded)

	b.ReportMetric(float64(storeGC.Microseconds())/1000, "store-ms")
	b.ReportMetric(float64(refGC.Microseconds())/1000, "decoded-ms")
	b.ReportMetric(float64(storeGC)/float64(refGC), "store/decoded")
	b.ReportMetric(float64(storeHeap)/(1<<20), "store-heap-MB")
	b.ReportMetric(float64(refHeap)/(1<<20), "decoded-heap-MB")
}
