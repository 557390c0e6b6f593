package storage

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestReadSnapshotReadsBackTheRecordedData: the data of a snapshot the
// WAL records reads back opened, through a rekey too; a snapshot purged
// since, or one the directory never held, is an error, not other data.
func TestReadSnapshotReadsBackTheRecordedData(t *testing.T) {
	dir := t.TempDir()
	sealer := testSealer(t)
	if err := Bootstrap(dir, sealer, nil, raftpb.HardState{Term: 1, Commit: 1}, entries(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	s, _, err := Open(dir, sealer, quiet) // keeps the newest snapshot only
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := raftpb.ConfState{Voters: []uint64{1}}
	snapAt := func(i uint64) raftpb.Snapshot {
		return raftpb.Snapshot{Data: bytes.Repeat([]byte{byte(i)}, 1000), Metadata: raftpb.SnapshotMetadata{Index: i, Term: 1, ConfState: cs}}
	}
	read := func(want raftpb.Snapshot) {
		t.Helper()
		got, err := s.ReadSnapshot(want.Metadata)
		if err != nil {
			t.Fatalf("ReadSnapshot(%d): %v", want.Metadata.Index, err)
		}
		if !bytes.Equal(got, want.Data) {
			t.Fatalf("ReadSnapshot(%d) = %d bytes %x..., want the saved ones", want.Metadata.Index, len(got), got[:min(len(got), 4)])
		}
	}
	saveAt := func(i uint64) raftpb.Snapshot {
		t.Helper()
		if err := s.Save(raftpb.HardState{Term: 1, Commit: i}, entries(i, i, 1)); err != nil {
			t.Fatal(err)
		}
		sn := snapAt(i)
		if err := s.SaveSnapshot(sn); err != nil {
			t.Fatal(err)
		}
		read(sn)
		return sn
	}
	first := saveAt(2)
	second := saveAt(3)
	if got, err := s.ReadSnapshot(first.Metadata); err == nil {
		t.Fatalf("ReadSnapshot of a purged snapshot returned %d bytes", len(got))
	}
	other := second.Metadata
	other.Term = 2
	if got, err := s.ReadSnapshot(other); err == nil {
		t.Fatalf("ReadSnapshot of a term the directory never held returned %d bytes", len(got))
	}

	rekeyed := testSealer(t)
	if err := s.Rekey(rekeyed, second, nil); err != nil {
		t.Fatal(err)
	}
	read(second)
}

// BenchmarkReadSnapshot reads back a 48 MiB snapshot, as the leader does
// each time a follower needs one (the file in the page cache, as a
// snapshot recently written is). ns/op is one read; it is what sending a
// snapshot to a joining manager costs beyond the send (docs/bench/cluster.md).
func BenchmarkReadSnapshot(b *testing.B) {
	s, data := benchSnapshotStorage(b)
	sn := raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}}
	if err := s.SaveSnapshot(sn); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.ReadSnapshot(sn.Metadata)
		if err != nil || len(got) != len(data) {
			b.Fatalf("ReadSnapshot: %d bytes, %v", len(got), err)
		}
	}
}
