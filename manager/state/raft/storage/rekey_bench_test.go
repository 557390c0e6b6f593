package storage

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
)

// BenchmarkRekey is how long turning autolock on holds a manager's Ready
// loop (no write commits meanwhile): Rekey of a state of 10 000 or 100 000
// tasks with 1 000 entries after its snapshot. The reference, in the same
// run on the same disk, is SaveSnapshot of that state, which every manager
// does every SnapshotInterval entries anyway. Reported: p50/p99 per
// operation in ms.
func BenchmarkRekey(b *testing.B) {
	for _, tasks := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) { benchRekey(b, tasks) })
	}
}

func benchRekey(b *testing.B, tasks int) {
	sn, ents := rekeyState(b, tasks, 1000)
	hs := raftpb.HardState{Term: 2, Commit: ents[len(ents)-1].Index}
	b.Run("rekey", func(b *testing.B) {
		s := openBenchLog(b, sn, hs, ents)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			key, _ := encryption.NewKey()
			sealer, _ := encryption.NewSealer(key)
			start := time.Now()
			if err := s.Rekey(sealer, sn, ents); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportMillis(b, lat)
		b.ReportMetric(float64(len(sn.Data))/1e6, "snapshot-MB")
	})
	b.Run("snapshot-reference", func(b *testing.B) {
		s := openBenchLog(b, sn, hs, ents)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := s.SaveSnapshot(sn); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportMillis(b, lat)
		b.ReportMetric(float64(len(sn.Data))/1e6, "snapshot-MB")
	})
}

// rekeyState is a snapshot of tasks tasks at index 10 and ents entries of
// one task each after it.
func rekeyState(b *testing.B, tasks, ents int) (raftpb.Snapshot, []raftpb.Entry) {
	b.Helper()
	now := timestamppb.Now()
	st := &api.StoreSnapshot{}
	for i := range tasks {
		st.Tasks = append(st.Tasks, &api.Task{Id: fmt.Sprintf("task-%08d", i), ServiceId: "bench-service",
			Meta: &api.Meta{CreatedAt: now, UpdatedAt: now}, DesiredState: api.TaskState_TASK_STATE_RUNNING})
	}
	data, err := proto.Marshal(&api.RaftSnapshot{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	sn := raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 2, ConfState: raftpb.ConfState{Voters: []uint64{1}}}}
	out := make([]raftpb.Entry, ents)
	for i := range out {
		out[i] = raftpb.Entry{Index: uint64(11 + i), Term: 2, Data: proposal(b)}
	}
	return sn, out
}

// openBenchLog is an open log holding sn and ents.
func openBenchLog(b *testing.B, sn raftpb.Snapshot, hs raftpb.HardState, ents []raftpb.Entry) *Storage {
	b.Helper()
	dir := b.TempDir()
	sealer := benchSealer(b)
	if err := Bootstrap(dir, sealer, []byte("meta"), raftpb.HardState{}, nil); err != nil {
		b.Fatal(err)
	}
	s, _, err := Open(dir, sealer, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.SaveSnapshot(sn); err != nil {
		b.Fatal(err)
	}
	if err := s.Save(hs, ents); err != nil {
		b.Fatal(err)
	}
	return s
}

func reportMillis(b *testing.B, lat []time.Duration) {
	b.Helper()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
}
