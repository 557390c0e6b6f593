package manager

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raftstoretest"
	"github.com/jaco-project/jaco/manager/state/store"
)

// BenchmarkCommittedWrites measures writes committed by a lone manager with
// fsync on, on the disk under b.TempDir(): every write is one Store.Update
// creating one small task, i.e. one raft proposal that returns once its
// entry is in the WAL (sealed, fdatasync'ed) and applied to the store.
// b.N writes are spread over the writers, which each issue their next write
// as soon as the previous one returns.
//
// Reported: writes/s over the whole run, and p50/p99 of the latency of one
// Update as its caller sees it. Right after the writes (untimed) it also
// measures the bare durability floor in the same directory, 500 etcd
// wal.Save calls of one entry of a proposal's size on a plain WAL, and
// reports its p50 (ref-p50-µs) and the ratio p50/ref-p50: the disk of a VM
// drifts from minute to minute, so a ratio taken seconds apart in another
// benchmark can mislead. BenchmarkFsyncReference in
// manager/state/raft/storage measures that floor in more detail;
// docs/bench/README.md has the command and figures.
func BenchmarkCommittedWrites(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchCommittedWrites(b, writers)
		})
	}
}

func benchCommittedWrites(b *testing.B, writers int) {
	m, sealer, dir := openTestManager(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Ids are made before the clock starts so that the loop times Update
	// and nothing else.
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-task-%08d", i)
	}
	lat := make([]time.Duration, b.N)
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				task := &api.Task{Id: ids[i], ServiceId: "bench-service", Meta: &api.Meta{}}
				t0 := time.Now()
				err := m.store.Update(ctx, func(tx *store.Tx) error { return tx.Create(task) })
				lat[i] = time.Since(t0)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("write %d: %w", i, err) })
					cancel() // release the other writers
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}

	var n int
	m.store.View(func(tx store.ReadTx) { n = len(tx.ListTasks()) })
	if n != b.N {
		b.Fatalf("store holds %d tasks after %d committed writes", n, b.N)
	}
	reportLatencies(b, lat, elapsed)
	ref := walSaveP50(b, sealer, dir, 500)
	b.ReportMetric(us(ref), "ref-p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.50))/float64(ref), "p50/ref-p50")
}

// walSaveP50 returns the median latency of n etcd wal.Save calls, each of
// one entry as large as a sealed one-task proposal, on a WAL created under
// dir: the fsync one commit needs and nothing else.
func walSaveP50(b *testing.B, sealer *encryption.Sealer, dir string, n int) time.Duration {
	b.Helper()
	now := timestamppb.Now()
	data, err := proto.Marshal(&api.InternalRaftRequest{Id: 1 << 63, Actions: []*api.StoreAction{{
		Kind: api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_Task{Task: &api.Task{
			Id: "bench-task-00000000", ServiceId: "bench-service",
			Meta: &api.Meta{CreatedAt: now, UpdatedAt: now},
		}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	rec := sealer.Seal(data, make([]byte, 17))
	w, err := wal.Create(zap.NewNop(), filepath.Join(dir, "ref-wal"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	lat := make([]time.Duration, n)
	for i := range lat {
		idx := uint64(i) + 1
		t0 := time.Now()
		if err := w.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: idx - 1},
			[]raftpb.Entry{{Term: 2, Index: idx, Data: rec}}); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return percentile(lat, 0.50)
}

// reportLatencies reports throughput and the p50/p99 of lat, in µs.
func reportLatencies(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	b.Helper()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "writes/s")
	b.ReportMetric(us(percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(us(percentile(lat, 0.99)), "p99-µs")
}

// percentile returns the p-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// openTestManager bootstraps a one-member cluster in a fresh temporary
// directory, opens it and waits until it leads. Cleanup stops it before the
// directory is removed. It returns the sealer and the temporary directory
// too.
func openTestManager(b testing.TB) (*Manager, *encryption.Sealer, string) {
	b.Helper()
	dir, sealer := raftstoretest.Bootstrap(b, &api.InternalRaftRequest{Actions: []*api.StoreAction{{
		Kind:   api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_Service{Service: &api.Service{Id: "bench-service", Meta: &api.Meta{}, Spec: &api.ServiceSpec{Name: "bench"}}},
	}}})
	// A short tick only shortens the first election; a lone member sends
	// no heartbeats, so it costs the Ready loop next to nothing.
	m := openLeading(b, dir, sealer, WithTickInterval(10*time.Millisecond), coreOnly())
	b.Cleanup(func() {
		if err := m.Stop(); err != nil {
			b.Errorf("stop manager: %v", err)
		}
	})
	return m, sealer, filepath.Dir(dir)
}

// openLeading opens the manager whose raft state is in dir, logging
// nowhere, and waits until it leads with everything committed before
// applied (WaitReady). A manager that does not lead within a minute is
// stopped and tb fails.
func openLeading(tb testing.TB, dir string, sealer *encryption.Sealer, opts ...Option) *Manager {
	tb.Helper()
	m, err := Open(dir, sealer, nil, append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.WaitReady(ctx); err != nil {
		_ = m.Stop()
		tb.Fatalf("wait until the manager leads: %v", err)
	}
	return m
}

// coreOnly leaves the subsystems that turn services into replicas out of
// a manager under test: the benchmarks' tasks belong to no real service.
func coreOnly() Option { return func(o *options) { o.coreOnly = true } }
