package logs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// testStore is a store in a temporary dir whose collectors poll often and
// stamp lines with a clock the test sets.
type testStore struct {
	*Store
	mu  sync.Mutex
	now time.Time
}

func newTestStore(t *testing.T) *testStore {
	t.Helper()
	ts := &testStore{Store: NewStore(t.TempDir()), now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	ts.Poll = time.Millisecond
	ts.Now = func() time.Time {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.now
	}
	return ts
}

func (ts *testStore) setNow(t time.Time) {
	ts.mu.Lock()
	ts.now = t
	ts.mu.Unlock()
}

// appendRaw writes s to replica id's raw file as a runtime does.
func (ts *testStore) appendRaw(t *testing.T, id, s string) {
	t.Helper()
	f, err := os.OpenFile(ts.RawPath(id), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// kept reads replica id's kept log whole.
func (ts *testStore) kept(t *testing.T, id string) []Line {
	t.Helper()
	var got []Line
	err := Read(context.Background(), ts.Path(id), Options{}, func(l Line) error {
		got = append(got, l)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return got
}

func data(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l.Data)
	}
	return out
}

// waitKept waits until replica id's kept log holds want.
func (ts *testStore) waitKept(t *testing.T, id string, want []string) []Line {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := ts.kept(t, id)
		if reflect.DeepEqual(data(got), want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("kept log of %s = %q, want %q", id, data(got), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCollectStampsLines: each line is kept with the time it was written
// down, and a line whose newline has not come yet is held back.
func TestCollectStampsLines(t *testing.T) {
	ts := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	col := ts.Collect(ctx, "r1")
	defer col.Wait()
	defer cancel() // before Wait, also when the test fails

	t1 := ts.now
	ts.appendRaw(t, "r1", "starting\nboom: ba")
	ts.waitKept(t, "r1", []string{"starting"})
	t2 := t1.Add(time.Minute)
	ts.setNow(t2)
	ts.appendRaw(t, "r1", "d config\n")
	got := ts.waitKept(t, "r1", []string{"starting", "boom: bad config"})
	if !got[0].Time.Equal(t1) || !got[1].Time.Equal(t2) {
		t.Fatalf("times %v, %v; want %v, %v", got[0].Time, got[1].Time, t1, t2)
	}
}

// TestCollectCutsLongLines: a line longer than MaxLine is kept cut, with
// the marker, however it arrives; the next line is kept whole.
func TestCollectCutsLongLines(t *testing.T) {
	ts := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	col := ts.Collect(ctx, "r1")
	defer col.Wait()
	defer cancel() // before Wait, also when the test fails

	long := strings.Repeat("x", 40<<10)
	ts.appendRaw(t, "r1", long[:10<<10])
	ts.appendRaw(t, "r1", long[10<<10:]+"\nnext\n")
	want := []string{long[:DefaultMaxLine] + CutMarker, "next"}
	ts.waitKept(t, "r1", want)

	exact := strings.Repeat("y", DefaultMaxLine)
	ts.appendRaw(t, "r1", exact+"\n")
	ts.waitKept(t, "r1", append(want, exact))
}

// TestCollectRotates: the kept log is rotated past MaxFile, one old part
// kept, so it never takes much more than twice MaxFile; reading it passes
// the newest lines in order.
func TestCollectRotates(t *testing.T) {
	ts := newTestStore(t)
	ts.MaxFile = 1 << 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	col := ts.Collect(ctx, "r1")
	var want []string
	for i := range 200 {
		line := strings.Repeat("z", 20) + string(rune('a'+i%26))
		ts.appendRaw(t, "r1", line+"\n")
		want = append(want, line)
	}
	col.Finish()

	var size int64
	for _, p := range []string{ts.Path("r1"), ts.Path("r1") + ".1"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatalf("after rotation: %v", err)
		}
		size += info.Size()
	}
	if size > 2*ts.MaxFile {
		t.Fatalf("kept log takes %d bytes, want at most %d", size, 2*ts.MaxFile)
	}
	got := data(ts.kept(t, "r1"))
	if len(got) == 0 || len(got) >= len(want) || !reflect.DeepEqual(got, want[len(want)-len(got):]) {
		t.Fatalf("after rotation read %d lines, want the last ones of %d in order: %q", len(got), len(want), got)
	}
}

// TestCollectCarriesOnAfterRestart: a collector started again (the agent
// restarted) keeps only what the last one did not, and Finish keeps a last
// line without its newline and removes the raw file.
func TestCollectCarriesOnAfterRestart(t *testing.T) {
	ts := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	col := ts.Collect(ctx, "r1")
	ts.appendRaw(t, "r1", "one\n")
	ts.waitKept(t, "r1", []string{"one"})
	cancel()
	col.Wait()

	ts.appendRaw(t, "r1", "two\nlast words")
	col = ts.Collect(context.Background(), "r1")
	ts.waitKept(t, "r1", []string{"one", "two"})
	col.Finish()
	ts.waitKept(t, "r1", []string{"one", "two", "last words"})
	if _, err := os.Stat(ts.RawPath("r1")); !os.IsNotExist(err) {
		t.Fatalf("raw log after Finish: %v, want it removed", err)
	}
	if left, _ := filepath.Glob(ts.Path("r1") + ".offset"); len(left) != 0 {
		t.Fatalf("offset file left after Finish: %v", left)
	}
}
