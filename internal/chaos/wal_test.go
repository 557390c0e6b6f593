package chaos

import (
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// TestTearLastRecord writes a WAL with etcd's own code, tears it, and
// requires etcd's reader to take it for a torn tail, not damage: entry 6,
// the torn record, is gone and everything before it is intact. The
// nemesis must do what it is named for.
func TestTearLastRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := wal.Create(zap.NewNop(), dir, []byte("meta"))
	if err != nil {
		t.Fatal(err)
	}
	var ents []raftpb.Entry
	for i := uint64(1); i <= 5; i++ {
		ents = append(ents, raftpb.Entry{Index: i, Term: 1, Data: []byte(strings.Repeat("x", 100))})
	}
	if err := w.Save(raftpb.HardState{Term: 1, Commit: 4}, ents); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(raftpb.HardState{}, []raftpb.Entry{{Index: 6, Term: 1, Data: []byte("last")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	torn, err := tearLastRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(torn, "entry record at ") {
		t.Errorf("tore %q, want the last entry record", torn)
	}

	r, err := wal.OpenForRead(zap.NewNop(), dir, walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Opened for reading, etcd's reader ends a log at a torn tail
	// without an error; damage would be an error.
	_, _, got, err := r.ReadAll()
	if err != nil {
		t.Fatalf("reading the torn WAL: %v, want it read up to the torn record", err)
	}
	if len(got) != 5 || got[4].Index != 5 {
		t.Errorf("read %d entries, want entries 1-5 intact and the torn entry 6 cut", len(got))
	}
}
