package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/encryption"
)

func sealerFor(t *testing.T, keys ...encryption.Key) *encryption.Sealer {
	t.Helper()
	s, err := encryption.NewSealer(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rekeyedLog builds a log under oldKey with a snapshot at 5 and entries up
// to 8, and rekeys it to newKey; it returns the dir.
func rekeyedLog(t *testing.T, oldKey, newKey encryption.Key) string {
	t.Helper()
	dir := t.TempDir()
	old := sealerFor(t, oldKey)
	if err := Bootstrap(dir, old, []byte("meta"), raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	s, _, err := Open(dir, old, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(raftpb.HardState{Term: 1, Commit: 8}, entries(4, 8, 1)); err != nil {
		t.Fatal(err)
	}
	cs := raftpb.ConfState{Voters: []uint64{1}}
	snapAt := func(i uint64) raftpb.Snapshot {
		return raftpb.Snapshot{Data: []byte("store"), Metadata: raftpb.SnapshotMetadata{Index: i, Term: 1, ConfState: cs}}
	}
	if err := s.SaveSnapshot(snapAt(4)); err != nil {
		t.Fatal(err)
	}
	both := sealerFor(t, newKey, oldKey)
	if err := s.Rekey(both, snapAt(5), entries(6, 8, 1)); err != nil {
		t.Fatal(err)
	}
	// The rekeyed log takes appends.
	if err := s.Save(raftpb.HardState{Term: 1, Commit: 9}, entries(9, 9, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// After a rekey the log opens with the new key alone and not with the old
// one: nothing on disk is sealed with the retired key any more.
func TestRekeyRetiresOldKey(t *testing.T) {
	oldKey, _ := encryption.NewKey()
	newKey, _ := encryption.NewKey()
	dir := rekeyedLog(t, oldKey, newKey)
	if _, _, err := Open(dir, sealerFor(t, oldKey), quiet); !errors.Is(err, encryption.ErrOpen) {
		t.Fatalf("open rekeyed log with the retired key: err = %v, want ErrOpen", err)
	}
	s, st, err := Open(dir, sealerFor(t, newKey), quiet)
	if err != nil {
		t.Fatalf("open rekeyed log with the new key: %v", err)
	}
	defer s.Close()
	if st.Snapshot.Metadata.Index != 5 || string(st.Snapshot.Data) != "store" {
		t.Fatalf("snapshot %+v, want the rekey's at 5", st.Snapshot.Metadata)
	}
	if len(st.Entries) != 4 || st.Entries[0].Index != 6 || st.Entries[3].Index != 9 || st.Entries[3].Data[0] != 9 {
		t.Fatalf("entries %v, want 6..9", st.Entries)
	}
	if st.HardState.Commit != 9 {
		t.Fatalf("hard state %+v", st.HardState)
	}
	snaps, _ := listSorted(filepath.Join(dir, "snap"), ".snap")
	if len(snaps) != 1 {
		t.Fatalf("snapshot files %v, want only the rekeyed one", snaps)
	}
}

// A crash at any point of the swap leaves a log that opens with the keys
// the node holds then (both, until the rekey returned).
func TestRekeyCrashRecovery(t *testing.T) {
	oldKey, _ := encryption.NewKey()
	newKey, _ := encryption.NewKey()
	both := sealerFor(t, newKey, oldKey)
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, wal string)
	}{
		// Crash with the new log complete, before the swap: the old log is
		// put back under .rekeyed to stand for "new log complete, not yet
		// installed".
		{"before swap", func(t *testing.T, wal string) { mustRename(t, wal, rekeyedDir(wal)); copyTree(t, rekeyedDir(wal), wal) }},
		// Crash between the two renames: only .old and .rekeyed exist.
		{"between renames", func(t *testing.T, wal string) {
			mustRename(t, wal, rekeyedDir(wal))
			if err := os.Mkdir(oldWALDir(wal), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		// Crash while building: a partial .rekey is dropped.
		{"while building", func(t *testing.T, wal string) {
			if err := os.MkdirAll(filepath.Join(rekeyBuildDir(wal), "junk"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rekeyedLog(t, oldKey, newKey)
			wal := filepath.Join(dir, "wal")
			tc.crash(t, wal)
			if !Exists(dir) {
				t.Fatal("Exists = false after an interrupted rekey")
			}
			s, st, err := Open(dir, both, quiet)
			if err != nil {
				t.Fatalf("open after crash: %v", err)
			}
			defer s.Close()
			if n := len(st.Entries); n == 0 || st.Entries[n-1].Index != 9 {
				t.Fatalf("entries %v, want up to 9", st.Entries)
			}
			for _, leftover := range []string{rekeyBuildDir(wal), rekeyedDir(wal), oldWALDir(wal)} {
				if exists(leftover) {
					t.Errorf("%s left behind", leftover)
				}
			}
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
