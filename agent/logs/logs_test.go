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

func readAll(t *testing.T, path string, opts Options) []string {
	t.Helper()
	var got []string
	err := Read(context.Background(), path, opts, func(l Line) error {
		got = append(got, string(l.Data))
		return nil
	})
	if err != nil {
		t.Fatalf("Read(%+v): %v", opts, err)
	}
	return got
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		tail    int
		want    []string
	}{
		{"all", "a\nb\nc\n", 0, []string{"a", "b", "c"}},
		{"last two", "a\nb\nc\n", 2, []string{"b", "c"}},
		{"more than there are", "a\nb\n", 10, []string{"a", "b"}},
		// A kept log's lines are written whole: one without its
		// newline is being written, and is left to following.
		{"unterminated last line is held", "a\nb\nc", 1, []string{"b"}},
		{"empty lines kept", "a\n\nb\n", 2, []string{"", "b"}},
		{"empty file", "", 3, nil},
		{"long file", strings.Repeat("x\n", 100000) + "end\n", 2, []string{"x", "end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.log")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, path, Options{Tail: tc.tail}); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMissingFileWithoutFollow(t *testing.T) {
	err := Read(context.Background(), filepath.Join(t.TempDir(), "none.log"), Options{}, func(Line) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a missing file: %v, want ErrNotExist", err)
	}
}

// TestFollowMissingFile: a follower does not fail on a file that does not
// exist yet (it waits for it) and returns nil once its context ends.
// TestFollow cannot pin this: its file may exist before Read opens it.
func TestFollowMissingFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Read(ctx, filepath.Join(t.TempDir(), "none.log"), Options{Follow: true, Poll: time.Millisecond}, func(Line) error { return nil })
	if err != nil {
		t.Fatalf("following a missing file: %v, want nil once ctx ends", err)
	}
}

// lines collects what a following Read passes, for polling from the test.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) add(line Line) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, string(line.Data))
	return nil
}

func (l *lines) waitFor(t *testing.T, want []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		got := append([]string(nil), l.got...)
		l.mu.Unlock()
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lines = %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	appendTo := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var l lines
	done := make(chan error, 1)
	// The file may not exist yet: a follower waits for it.
	go func() { done <- Read(ctx, path, Options{Tail: 1, Follow: true, Poll: 5 * time.Millisecond}, l.add) }()

	appendTo("first\n")
	l.waitFor(t, []string{"first"})
	appendTo("second\nthi")
	l.waitFor(t, []string{"first", "second"}) // a partial line is held
	appendTo("rd\n")
	l.waitFor(t, []string{"first", "second", "third"})

	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	// Shorter than what was read: the follower notices the truncation
	// whether or not it saw the file empty.
	appendTo("after truncate\n")
	l.waitFor(t, []string{"first", "second", "third", "after truncate"})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Read after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return after its context ended")
	}
}

func TestFollowStartsAtTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	if err := os.WriteFile(path, []byte("old1\nold2\nold3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var l lines
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Read(ctx, path, Options{Tail: 2, Follow: true, Poll: 5 * time.Millisecond}, l.add)
	}()
	l.waitFor(t, []string{"old2", "old3"})
	cancel()
	<-done
}

// stamped is a kept log's line at minute m past a fixed hour.
func stamped(m int, data string) string {
	return time.Date(2026, 1, 2, 3, m, 0, 0, time.UTC).Format(time.RFC3339Nano) + " " + data + "\n"
}

// TestSinceAndTail: since leaves out older lines, tail counts only the
// lines since lets through, and both span the rotated part.
func TestSinceAndTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	if err := os.WriteFile(path+".1", []byte(stamped(1, "one")+stamped(2, "two")+stamped(3, "three")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(stamped(4, "four")+stamped(5, "five")), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(m int) time.Time { return time.Date(2026, 1, 2, 3, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"all, rotated part first", Options{}, []string{"one", "two", "three", "four", "five"}},
		{"tail spans both parts", Options{Tail: 3}, []string{"three", "four", "five"}},
		{"since is inclusive", Options{Since: at(2)}, []string{"two", "three", "four", "five"}},
		{"since then tail", Options{Since: at(4), Tail: 5}, []string{"four", "five"}},
		{"tail of what since keeps", Options{Since: at(2), Tail: 1}, []string{"five"}},
		{"since after every line", Options{Since: at(9)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readAll(t, path, tc.opts); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	var times []time.Time
	err := Read(context.Background(), path, Options{Tail: 1}, func(l Line) error {
		times = append(times, l.Time)
		return nil
	})
	if err != nil || len(times) != 1 || !times[0].Equal(at(5)) {
		t.Fatalf("time of the last line: %v (%v), want %v", times, err, at(5))
	}
}

// TestFollowAcrossRotation: a follower carries on into the new file when
// the log rotates, losing nothing written to the old one.
func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	write := func(p, s string) {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(path, stamped(1, "before"))
	ctx, cancel := context.WithCancel(context.Background())
	var l lines
	done := make(chan error, 1)
	go func() { done <- Read(ctx, path, Options{Follow: true, Poll: time.Millisecond}, l.add) }()
	l.waitFor(t, []string{"before"})

	write(path, stamped(2, "last of old"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write(path, stamped(3, "first of new"))
	l.waitFor(t, []string{"before", "last of old", "first of new"})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Read after cancel: %v", err)
	}
}
