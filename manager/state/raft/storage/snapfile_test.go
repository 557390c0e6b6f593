package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// TestSnapFileIsEtcdsFormat: writeSnapFile writes exactly the file etcd's
// snapshotter writes for the same snapshot, so the snapshotter that loads
// snapshots at Open reads it, for small data and for megabytes; the file
// is private to its owner and alone in its directory (no temporary left).
func TestSnapFileIsEtcdsFormat(t *testing.T) {
	for _, size := range snapFileSizes {
		sn, ours, theirs := writeBothSnapFiles(t, size)
		data := sn.Data
		name := snapFileName(sn.Metadata)
		got, err := os.ReadFile(filepath.Join(ours, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(theirs, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes of data: our file (%d bytes) differs from etcd's (%d)", size, len(got), len(want))
		}
		read, err := snap.Read(zap.NewNop(), filepath.Join(ours, name))
		if err != nil || !bytes.Equal(read.Data, data) || read.Metadata.Index != 1234 {
			t.Fatalf("%d bytes of data: snapshotter read back %v", size, err)
		}
		fi, err := os.Stat(filepath.Join(ours, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
		}
		entries, _ := os.ReadDir(ours)
		if len(entries) != 1 {
			t.Fatalf("%d entries in the snapshot dir, want the file alone", len(entries))
		}
	}
}

// TestReadSnapFileReadsEtcdsFormat: readSnapFile reads what writeSnapFile
// and etcd's snapshotter write, data and metadata; a changed byte or a cut
// file is an error, never other data.
func TestReadSnapFileReadsEtcdsFormat(t *testing.T) {
	for _, size := range snapFileSizes {
		sn, ours, theirs := writeBothSnapFiles(t, size)
		data := sn.Data
		for _, dir := range []string{ours, theirs} {
			path := filepath.Join(dir, snapFileName(sn.Metadata))
			got, err := readSnapFile(path)
			if err != nil {
				t.Fatalf("%d bytes of data: %v", size, err)
			}
			if !bytes.Equal(got.Data, data) || !reflect.DeepEqual(got.Metadata, sn.Metadata) {
				t.Fatalf("%d bytes of data: read back %d bytes, metadata %v", size, len(got.Data), got.Metadata)
			}
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range [][]byte{flipped(file, len(file)/2), file[:len(file)-1]} {
				if err := os.WriteFile(path, bad, 0o600); err != nil {
					t.Fatal(err)
				}
				if got, err := readSnapFile(path); err == nil {
					t.Fatalf("%d bytes of data: a damaged file read back as %d bytes", size, len(got.Data))
				}
			}
		}
	}
}

func flipped(b []byte, at int) []byte {
	out := bytes.Clone(b)
	out[at] ^= 0x40
	return out
}

// snapFileSizes are the data sizes the snapshot file tests try: tiny, and
// past the megabytes a chunk or buffer might hold.
var snapFileSizes = []int{1, 300, 3<<20 + 17}

// writeBothSnapFiles writes a snapshot of size bytes of data with
// writeSnapFile into ours and with etcd's snapshotter into theirs.
func writeBothSnapFiles(t *testing.T, size int) (sn raftpb.Snapshot, ours, theirs string) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sn = raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{
		Index: 1234, Term: 5, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{9}}}}
	ours, theirs = t.TempDir(), t.TempDir()
	if err := writeSnapFile(ours, sn); err != nil {
		t.Fatal(err)
	}
	if err := snap.New(zap.NewNop(), theirs).SaveSnap(sn); err != nil {
		t.Fatal(err)
	}
	return sn, ours, theirs
}
