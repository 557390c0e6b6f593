package storage

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/encryption"
)

// writeLog bootstraps a log in a new dir, runs save on it and closes it.
func writeLog(t *testing.T, sealer *encryption.Sealer, save func(s *Storage)) string {
	t.Helper()
	dir := t.TempDir()
	if err := Bootstrap(dir, sealer, []byte("meta"), raftpb.HardState{Term: 1, Commit: 1}, entries(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	s, _, err := Open(dir, sealer, quiet)
	if err != nil {
		t.Fatal(err)
	}
	save(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func save(t *testing.T, s *Storage, hs raftpb.HardState, ents []raftpb.Entry) {
	t.Helper()
	if err := s.Save(hs, ents); err != nil {
		t.Fatal(err)
	}
}

// lastSegment returns the path of the newest WAL segment in dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	names, err := segmentNames(walDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(walDir(dir), names[len(names)-1])
}

// cutInsideLastRecord truncates the last segment of dir in the middle of
// its last record, as a crash mid-write (or a disk that lost the tail)
// leaves it.
func cutInsideLastRecord(t *testing.T, dir string) string {
	t.Helper()
	path := lastSegment(t, dir)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	var start, end int64
	for {
		before := dec.LastOffset()
		var rec walpb.Record
		if err := dec.Decode(&rec); err != nil {
			break
		}
		start, end = before, dec.LastOffset()
	}
	f.Close()
	if err := os.Truncate(path, start+(end-start)/2); err != nil {
		t.Fatal(err)
	}
	return path
}

// digest maps every file under dir to a hash of its content.
func digest(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// refusedUntouched opens dir, requires a refusal matching target whose
// message holds every one of want, and requires every file unchanged.
func refusedUntouched(t *testing.T, dir string, sealer *encryption.Sealer, target error, want ...string) {
	t.Helper()
	before := digest(t, dir)
	s, _, err := Open(dir, sealer, quiet)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, target) {
		t.Fatalf("Open: %v, want %v", err, target)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	if after := digest(t, dir); !maps.Equal(before, after) {
		t.Errorf("the refused open changed the files: before %v, after %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// A torn record past the last commit is the ordinary crash: it was never
// acknowledged, and the open cuts it off and goes on.
func TestTornTailAfterCommitIsCut(t *testing.T) {
	sealer := testSealer(t)
	dir := writeLog(t, sealer, func(s *Storage) {
		save(t, s, raftpb.HardState{Term: 1, Commit: 5}, entries(2, 5, 1))
		save(t, s, raftpb.HardState{}, entries(6, 6, 1)) // not yet committed
	})
	seg := cutInsideLastRecord(t, dir)
	var logged bytes.Buffer
	s, st, err := Open(dir, sealer, Options{Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(st.Entries); n != 5 || st.Entries[n-1].Index != 5 || st.HardState.Commit != 5 {
		t.Fatalf("after the cut: %d entries, commit %d; want 1..5, commit 5", n, st.HardState.Commit)
	}
	// etcd's own account of the repair reaches the daemon's log.
	var repaired bool
	for line := range strings.Lines(logged.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		repaired = repaired || rec["component"] == "wal" && rec["msg"] == "repaired" && rec["path"] == seg
	}
	if !repaired {
		t.Errorf("no record of etcd's repair of %s with component=wal; the log holds:\n%s", seg, logged.String())
	}
}

// A torn tail whose cut would leave the log short of the commit index it
// recorded would drop entries this member acknowledged. (etcd writes the
// hard state after its entries, so here it is written ahead of entry 6
// by hand, standing for any log whose recorded commit lies in the tail.)
// The open refuses, names the segment, the index kept and the index
// promised, and writes nothing: no cut, no .broken copy.
func TestTornTailHoldingAcknowledgedEntryIsRefusedUntouched(t *testing.T) {
	sealer := testSealer(t)
	dir := writeLog(t, sealer, func(s *Storage) {
		save(t, s, raftpb.HardState{Term: 1, Commit: 6}, entries(2, 5, 1))
		save(t, s, raftpb.HardState{}, entries(6, 6, 1))
	})
	path := cutInsideLastRecord(t, dir)
	refusedUntouched(t, dir, sealer, ErrLostAcknowledged,
		filepath.Base(path), "end at index 5", "up to index 6")
}

// A segment that a crash cannot have produced is refused before anything
// is written, naming the file and the offset.
func TestDamagedSegmentIsRefusedUntouched(t *testing.T) {
	garbage := make([]byte, 4096)
	if _, err := rand.Read(garbage); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// damage changes dir's log and returns the damaged file.
		damage func(t *testing.T, dir string) string
	}{
		{"garbage last segment", func(t *testing.T, dir string) string {
			return addSegment(t, dir, garbage)
		}},
		{"empty last segment", func(t *testing.T, dir string) string {
			return addSegment(t, dir, nil)
		}},
		{"garbage only segment", func(t *testing.T, dir string) string {
			path := lastSegment(t, dir)
			if err := os.WriteFile(path, garbage, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"earlier segment cut short", func(t *testing.T, dir string) string {
			path := lastSegment(t, dir)
			addSegment(t, dir, nil)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()-3); err != nil {
				t.Fatal(err)
			}
			return path
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sealer := testSealer(t)
			dir := writeLog(t, sealer, func(s *Storage) {
				save(t, s, raftpb.HardState{Term: 1, Commit: 5}, entries(2, 5, 1))
			})
			path := tc.damage(t, dir)
			refusedUntouched(t, dir, sealer, ErrDamaged, filepath.Base(path), "at offset ")
		})
	}
}

// addSegment writes content as the segment after the newest one; the
// newest is truncated to its records first, as etcd leaves a segment it
// moved on from. It returns the new segment's path.
func addSegment(t *testing.T, dir string, content []byte) string {
	t.Helper()
	prev := lastSegment(t, dir)
	seq, _, err := parseSegmentName(filepath.Base(prev))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(prev, recordsEnd(t, prev)); err != nil {
		t.Fatal(err)
	}
	// The logs here hold entries up to 5.
	path := filepath.Join(walDir(dir), fmt.Sprintf("%016x-%016x.wal", seq+1, 6))
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// recordsEnd is the offset where the records of a segment end.
func recordsEnd(tb testing.TB, path string) int64 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	for {
		var rec walpb.Record
		if err := dec.Decode(&rec); err != nil {
			return dec.LastOffset()
		}
	}
}
