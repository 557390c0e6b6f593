package storage

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/encryption"
)

func testSealer(t *testing.T) *encryption.Sealer {
	t.Helper()
	key, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := encryption.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func entries(from, to, term uint64) []raftpb.Entry {
	var ents []raftpb.Entry
	for i := from; i <= to; i++ {
		ents = append(ents, raftpb.Entry{Index: i, Term: term, Type: raftpb.EntryNormal, Data: []byte{byte(i)}})
	}
	return ents
}

var quiet = Options{Logger: slog.New(slog.DiscardHandler)}

func TestBootstrapOpenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sealer := testSealer(t)
	if Exists(dir) {
		t.Fatal("empty dir reported as holding raft state")
	}
	if _, _, err := Open(dir, sealer, quiet); !errors.Is(err, ErrNoState) {
		t.Fatalf("Open of empty dir: %v, want ErrNoState", err)
	}
	if err := Bootstrap(dir, sealer, []byte("meta"), raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	if err := Bootstrap(dir, sealer, []byte("meta"), raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1)); err == nil {
		t.Fatal("second Bootstrap over an existing log succeeded")
	}
	s, st, err := Open(dir, sealer, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if string(st.Metadata) != "meta" || st.HardState.Commit != 3 || len(st.Entries) != 3 || st.Entries[2].Data[0] != 3 {
		t.Fatalf("read back %+v", st)
	}
}

func TestOpenWithOtherKeyFails(t *testing.T) {
	dir := t.TempDir()
	if err := Bootstrap(dir, testSealer(t), nil, raftpb.HardState{Term: 1, Commit: 1}, entries(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(dir, testSealer(t), quiet); !errors.Is(err, encryption.ErrOpen) {
		t.Fatalf("Open with another key: %v, want ErrOpen", err)
	}
}

func TestOpenRefusesLostCommittedEntries(t *testing.T) {
	// A log whose hard state says 5 is committed but which holds only 3
	// entries: acknowledged writes are missing.
	sealer := testSealer(t)
	dir := t.TempDir()
	if err := Bootstrap(dir, sealer, nil, raftpb.HardState{Term: 1, Commit: 5}, entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(dir, sealer, quiet); !errors.Is(err, ErrLostAcknowledged) {
		t.Fatalf("Open: %v, want ErrLostAcknowledged", err)
	}
}

func TestSnapshotsArePurgedAndReloaded(t *testing.T) {
	dir := t.TempDir()
	sealer := testSealer(t)
	if err := Bootstrap(dir, sealer, nil, raftpb.HardState{Term: 1, Commit: 1}, entries(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	opts := quiet
	opts.KeepOldSnapshots = 1
	s, _, err := Open(dir, sealer, opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := raftpb.ConfState{Voters: []uint64{1}}
	for i := uint64(2); i <= 10; i++ {
		if err := s.Save(raftpb.HardState{Term: 1, Commit: i}, entries(i, i, 1)); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			snap := raftpb.Snapshot{Data: []byte{0xAA, byte(i)}, Metadata: raftpb.SnapshotMetadata{Index: i, Term: 1, ConfState: cs}}
			if err := s.SaveSnapshot(snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap", "*.snap"))
	if len(snaps) != 2 {
		t.Fatalf("snapshot files %v, want the newest 2", snaps)
	}
	s, st, err := Open(dir, sealer, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st.Snapshot.Metadata.Index != 9 || st.Snapshot.Data[1] != 9 {
		t.Fatalf("loaded snapshot %d %x, want index 9", st.Snapshot.Metadata.Index, st.Snapshot.Data)
	}
	if len(st.Entries) != 1 || st.Entries[0].Index != 10 {
		t.Fatalf("entries after snapshot: %+v, want just 10", st.Entries)
	}
}
