package storage

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// BenchmarkSnapshotBesideWAL writes one 48 MiB snapshot per iteration
// while another goroutine saves one-entry batches to the WAL of the same
// Storage, as the Ready loop does while a snapshot is written off it:
//
//   - etcd-snapshotter: the snapshot sealed, then written by etcd's
//     snapshotter, as WriteSnapshotFile did before docs/adr/0045;
//   - storage: WriteSnapshotFile.
//
// ns/op is one snapshot's write; wal-p50/p99/max-µs are the WAL saves that
// ran during the iterations (docs/bench/cluster.md, "Snapshots of a large
// store").
func BenchmarkSnapshotBesideWAL(b *testing.B) {
	b.Run("etcd-snapshotter", func(b *testing.B) {
		benchSnapshotBesideWAL(b, func(s *Storage, sn raftpb.Snapshot) error {
			return snap.New(zap.NewNop(), s.snapDir).SaveSnap(sealSnapshot(s.sealer, sn))
		})
	})
	b.Run("storage", func(b *testing.B) {
		benchSnapshotBesideWAL(b, (*Storage).WriteSnapshotFile)
	})
}

// benchSnapshotStorage opens a log of one proposal, closed when b ends,
// and returns it with 48 MiB of snapshot data, about the benchmark
// cluster's store at 440 000 join tokens.
func benchSnapshotStorage(b *testing.B) (*Storage, []byte) {
	b.Helper()
	sealer := benchSealer(b)
	dir := filepath.Join(b.TempDir(), "raft")
	if err := Bootstrap(dir, sealer, []byte("bench"), raftpb.HardState{Term: 1, Commit: 1},
		[]raftpb.Entry{{Term: 1, Index: 1, Data: proposal(b)}}); err != nil {
		b.Fatal(err)
	}
	s, _, err := Open(dir, sealer, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	data := make([]byte, 48<<20)
	for i := range data {
		data[i] = byte(i * 131)
	}
	return s, data
}

func benchSnapshotBesideWAL(b *testing.B, write func(*Storage, raftpb.Snapshot) error) {
	s, data := benchSnapshotStorage(b)

	var (
		mu      sync.Mutex
		lat     []time.Duration
		measure bool
		saveErr error
	)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ent := proposal(b)
		for idx := uint64(2); ; idx++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			err := s.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: idx - 1}, []raftpb.Entry{{Term: 2, Index: idx, Data: ent}})
			d := time.Since(t0)
			mu.Lock()
			if err != nil {
				saveErr = err
			}
			if measure {
				lat = append(lat, d)
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	setMeasure := func(on bool) { mu.Lock(); measure = on; mu.Unlock() }

	b.ResetTimer()
	for i := range b.N {
		sn := raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: uint64(i) + 1, Term: 1}}
		setMeasure(true)
		if err := write(s, sn); err != nil {
			b.Fatal(err)
		}
		setMeasure(false)
	}
	b.StopTimer()
	close(stop)
	<-stopped
	if saveErr != nil {
		b.Fatal(saveErr)
	}
	slices.Sort(lat)
	b.ReportMetric(us(percentile(lat, 0.50)), "wal-p50-µs")
	b.ReportMetric(us(percentile(lat, 0.99)), "wal-p99-µs")
	if len(lat) > 0 {
		b.ReportMetric(us(lat[len(lat)-1]), "wal-max-µs")
	}
}
