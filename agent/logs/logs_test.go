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
