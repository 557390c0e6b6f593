package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
)

// BenchmarkFsyncReference is the durability floor of one committed write on
// the disk under b.TempDir(), to read next to BenchmarkCommittedWrites in
// package manager (same command, same run, same disk). Each iteration makes
// one record of the size a one-task proposal has durable, one at a time:
//
//   - fdatasync: pwrite the sealed entry's bytes into a preallocated file,
//     then fdatasync; no framing, no CRC.
//   - wal: etcd's wal.Save of one entry plus hard state on a WAL made by
//     wal.Create, which is exactly what the Ready loop does for a commit.
//   - wal-after-idle: the same, but each save follows a time.Sleep(200µs)
//     (which may last up to about 1ms; it is in ns/op, not in the
//     latencies), as a lone writer's saves do: between two of its fsyncs
//     the Ready loop waits for the next proposal. On a VM an fdatasync
//     issued from idle can cost more than back-to-back ones.
//   - storage: this package's Storage.Save on a bootstrapped log: the wal
//     case plus sealing the entry (XChaCha20-Poly1305).
//
// Reported: saves/s and p50/p99 per save, in µs.
func BenchmarkFsyncReference(b *testing.B) {
	b.Run("fdatasync", benchFdatasync)
	b.Run("wal", func(b *testing.B) { benchWAL(b, 0) })
	b.Run("wal-after-idle", func(b *testing.B) { benchWAL(b, 200*time.Microsecond) })
	b.Run("storage", benchStorage)
}

// proposal is the encoded InternalRaftRequest of one Store.Update creating
// one task, as BenchmarkCommittedWrites makes them.
func proposal(b *testing.B) []byte {
	b.Helper()
	now := timestamppb.Now()
	data, err := proto.Marshal(&api.InternalRaftRequest{Id: 0x1234567890abcdef, Actions: []*api.StoreAction{{
		Kind: api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_Task{Task: &api.Task{
			Id: "bench-task-00000000", ServiceId: "bench-service",
			Meta: &api.Meta{CreatedAt: now, UpdatedAt: now},
		}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchSealer(b *testing.B) *encryption.Sealer {
	b.Helper()
	key, err := encryption.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	s, err := encryption.NewSealer(key)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchFdatasync(b *testing.B) {
	rec := sealEntries(benchSealer(b), []raftpb.Entry{{Term: 2, Index: 3, Data: proposal(b)}})[0].Data
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "records"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// Preallocated like a WAL segment, so fdatasync has no size change to
	// journal: the cheapest durable append the disk offers.
	size := int64(b.N+1) * int64(len(rec))
	if err := fileutil.Preallocate(f, size, true); err != nil {
		b.Fatal(err)
	}
	if err := fileutil.Fsync(f); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		if _, err := f.WriteAt(rec, int64(i)*int64(len(rec))); err != nil {
			b.Fatal(err)
		}
		if err := fileutil.Fdatasync(f); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(len(rec)), "bytes/record")
	reportSaves(b, lat, elapsed)
}

// benchWAL saves one entry per iteration; with idle > 0 it sleeps that long
// before each save, outside the measured latency.
func benchWAL(b *testing.B, idle time.Duration) {
	rec := sealEntries(benchSealer(b), []raftpb.Entry{{Term: 2, Index: 3, Data: proposal(b)}})[0].Data
	w, err := wal.Create(zap.NewNop(), filepath.Join(b.TempDir(), "wal"), []byte("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		idx := uint64(i) + 1
		ent := []raftpb.Entry{{Term: 2, Index: idx, Data: rec}}
		if idle > 0 {
			// Not StopTimer: it reads memory statistics, which stops the
			// world; ns/op of this case includes the sleep instead.
			time.Sleep(idle)
		}
		t0 := time.Now()
		if err := w.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: idx - 1}, ent); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if idle > 0 {
		elapsed = 0 // the sleeps are in it: no throughput to report
	}
	b.ReportMetric(float64(len(rec)), "bytes/record")
	reportSaves(b, lat, elapsed)
}

func benchStorage(b *testing.B) {
	sealer := benchSealer(b)
	data := proposal(b)
	dir := filepath.Join(b.TempDir(), "raft")
	if err := Bootstrap(dir, sealer, []byte("bench"), raftpb.HardState{Term: 1, Commit: 1},
		[]raftpb.Entry{{Term: 1, Index: 1, Data: data}}); err != nil {
		b.Fatal(err)
	}
	s, _, err := Open(dir, sealer, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		idx := uint64(i) + 2
		ent := []raftpb.Entry{{Term: 2, Index: idx, Data: data}}
		t0 := time.Now()
		if err := s.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: idx - 1}, ent); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	reportSaves(b, lat, elapsed)
}

// reportSaves reports throughput (unless elapsed is 0) and the p50/p99 of
// lat, in µs.
func reportSaves(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	b.Helper()
	slices.Sort(lat)
	if elapsed > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "saves/s")
	}
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
