package volumes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/internal/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// requireRoot skips (or fails, where tests must run) a test that sets
// owners or makes device nodes.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root (chown, mknod)")
	}
}

// stat returns path's lstat.
func stat(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// CopyTree keeps what Docker's copy-up keeps: the root's owner and mode
// go to the destination itself, and below it files (content, owner, mode,
// times), directories, symlinks (as links, with their owner), hard links
// (still one inode), fifos and device nodes, and user xattrs where the
// file system holds them.
func TestCopyTreeKeepsOwnersModesAndKinds(t *testing.T) {
	requireRoot(t)
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.Mkdir(src, 0o750))
	must(t, os.Chown(src, 472, 0))
	seed := filepath.Join(src, "seed")
	must(t, os.WriteFile(seed, []byte("seed\n"), 0o640))
	must(t, os.Chmod(seed, 0o640))
	must(t, os.Chown(seed, 472, 473))
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, os.Chtimes(seed, mtime, mtime))
	must(t, os.Mkdir(filepath.Join(src, "sub"), 0o700))
	must(t, unix.Chmod(filepath.Join(src, "sub"), 0o2770)) // os.Chmod drops a raw setgid bit
	must(t, os.Chown(filepath.Join(src, "sub"), 472, 472))
	must(t, os.WriteFile(filepath.Join(src, "sub", "deep"), []byte("deep"), 0o600))
	must(t, os.Symlink("seed", filepath.Join(src, "link")))
	must(t, os.Lchown(filepath.Join(src, "link"), 472, 472))
	must(t, os.Link(seed, filepath.Join(src, "hard")))
	must(t, unix.Mkfifo(filepath.Join(src, "fifo"), 0o620))
	must(t, unix.Chmod(filepath.Join(src, "fifo"), 0o620)) // past the umask
	must(t, unix.Mknod(filepath.Join(src, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	must(t, unix.Chmod(filepath.Join(src, "null"), 0o666))
	xattrs := unix.Lsetxattr(seed, "user.jaco", []byte("kept"), 0) == nil

	dst := filepath.Join(t.TempDir(), "_data")
	must(t, os.Mkdir(dst, 0o755))
	skips, err := CopyTree(dst, src)
	if err != nil {
		t.Fatalf("CopyTree: %v", err)
	}
	if skips.N != 0 {
		t.Errorf("xattrs left out: %d (%v); want none", skips.N, skips.First)
	}

	for _, w := range []struct {
		name     string
		mode     uint32 // type and permission bits
		uid, gid uint32
	}{
		{"", unix.S_IFDIR | 0o750, 472, 0},
		{"seed", unix.S_IFREG | 0o640, 472, 473},
		{"sub", unix.S_IFDIR | 0o2770, 472, 472},
		{"sub/deep", unix.S_IFREG | 0o600, 0, 472}, // setgid sub gave it its group
		{"link", unix.S_IFLNK | 0o777, 472, 472},
		{"fifo", unix.S_IFIFO | 0o620, 0, 0},
		{"null", unix.S_IFCHR | 0o666, 0, 0},
	} {
		st := stat(t, filepath.Join(dst, w.name))
		if st.Mode != w.mode || st.Uid != w.uid || st.Gid != w.gid {
			t.Errorf("%q: mode %o owner %d:%d; want mode %o owner %d:%d", w.name, st.Mode, st.Uid, st.Gid, w.mode, w.uid, w.gid)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "seed")); err != nil || string(b) != "seed\n" {
		t.Errorf("seed: %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "seed")); err != nil || !fi.ModTime().Equal(mtime) {
		t.Errorf("seed's mtime: %v, %v; want %v", fi.ModTime(), err, mtime)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "seed" {
		t.Errorf("link: %q, %v; want seed", l, err)
	}
	if a, b := stat(t, filepath.Join(dst, "seed")), stat(t, filepath.Join(dst, "hard")); a.Ino != b.Ino {
		t.Errorf("hard link copied as another file (inodes %d, %d)", a.Ino, b.Ino)
	}
	if st := stat(t, filepath.Join(dst, "null")); st.Rdev != stat(t, filepath.Join(src, "null")).Rdev {
		t.Errorf("device node's numbers: %d; want %d", st.Rdev, stat(t, filepath.Join(src, "null")).Rdev)
	}
	if xattrs {
		buf := make([]byte, 16)
		n, err := unix.Lgetxattr(filepath.Join(dst, "seed"), "user.jaco", buf)
		if err != nil || string(buf[:n]) != "kept" {
			t.Errorf("user.jaco xattr: %q, %v; want kept", buf[:n], err)
		}
	} else {
		t.Log("this file system takes no user xattrs: their copy is not checked")
	}

	got, err := Measure(src)
	if err != nil {
		t.Fatal(err)
	}
	// seed, sub, sub/deep, link, hard, fifo, null; bytes of seed, hard, deep.
	if want := (TreeStats{Entries: 7, Bytes: 5 + 5 + 4}); got != want {
		t.Errorf("Measure = %+v; want %+v", got, want)
	}
}

// volume makes an empty volume layout (<root>/_data) and returns _data.
func volume(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "vol", "_data")
	must(t, os.MkdirAll(data, 0o755))
	return data
}

// writeSeed is a fill that writes one file.
func writeSeed(calls *int) func(string) error {
	return func(dst string) error {
		*calls++
		return os.WriteFile(filepath.Join(dst, "seed"), []byte("from the image"), 0o644)
	}
}

// An empty volume is filled once; one holding anything (what a replica
// wrote) is never written into again; volume_no_copy (no fill) leaves an
// empty one empty.
func TestPopulateOnlyEmpty(t *testing.T) {
	ctx := context.Background()
	data := volume(t)
	if filled, err := Populate(ctx, data, nil, quiet); filled || err != nil {
		t.Fatalf("no fill: %v, %v; want nothing done", filled, err)
	}
	if empty, _ := isEmpty(data); !empty {
		t.Fatal("no fill: volume not empty")
	}
	var calls int
	if filled, err := Populate(ctx, data, writeSeed(&calls), quiet); !filled || err != nil || calls != 1 {
		t.Fatalf("first Populate: %v, %v, %d calls; want filled once", filled, err, calls)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(data), copyMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker after a whole copy: %v; want none", err)
	}
	must(t, os.WriteFile(filepath.Join(data, "seed"), []byte("the replica's"), 0o644))
	if filled, err := Populate(ctx, data, writeSeed(&calls), quiet); filled || err != nil || calls != 1 {
		t.Fatalf("second Populate: %v, %v, %d calls; want no copy", filled, err, calls)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "seed")); string(b) != "the replica's" {
		t.Fatalf("seed after a second Populate: %q; want the replica's data kept", b)
	}
}

// A copy cut short (a marker left beside _data, part of the content in
// it) is cleared and done again, never taken for the volume's data; with
// no fill it is cleared and the volume is empty.
func TestPopulateRedoesInterruptedCopy(t *testing.T) {
	ctx := context.Background()
	for _, fill := range []bool{true, false} {
		data := volume(t)
		must(t, writeMarker(filepath.Join(filepath.Dir(data), copyMarker)))
		must(t, os.MkdirAll(filepath.Join(data, "half", "copied"), 0o755))
		var calls int
		var f func(string) error
		if fill {
			f = func(dst string) error {
				if empty, err := isEmpty(dst); !empty || err != nil {
					t.Errorf("fill: dst not cleared first (%v)", err)
				}
				return writeSeed(&calls)(dst)
			}
		}
		filled, err := Populate(ctx, data, f, quiet)
		if err != nil || filled != fill {
			t.Fatalf("fill %v: Populate = %v, %v; want filled %v", fill, filled, err, fill)
		}
		if _, err := os.Stat(filepath.Join(data, "half")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("fill %v: the half copy is still there (%v)", fill, err)
		}
		if _, err := os.Stat(filepath.Join(data, "seed")); (err == nil) != fill {
			t.Errorf("fill %v: seed: %v", fill, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(data), copyMarker)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("fill %v: marker still there (%v)", fill, err)
		}
	}
}

// A copy that fails leaves the volume empty, with no marker, and fails
// Populate with its error; the next Populate copies.
func TestPopulateFailedCopyLeavesEmpty(t *testing.T) {
	ctx := context.Background()
	data := volume(t)
	boom := errors.New("disk full")
	_, err := Populate(ctx, data, func(dst string) error {
		must(t, os.WriteFile(filepath.Join(dst, "part"), []byte("x"), 0o644))
		return boom
	}, quiet)
	if !errors.Is(err, boom) {
		t.Fatalf("Populate with a failing copy = %v; want its error", err)
	}
	if empty, _ := isEmpty(data); !empty {
		t.Fatal("volume not empty after a failed copy")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(data), copyMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker after a failed copy cleared: %v; want none", err)
	}
	var calls int
	if filled, err := Populate(ctx, data, writeSeed(&calls), quiet); !filled || err != nil {
		t.Fatalf("Populate after a failed one: %v, %v; want filled", filled, err)
	}
}

// Copies into one volume take turns: while one runs, another waits (here
// until its deadline), and after it the volume is no longer empty.
func TestPopulateTakesTurns(t *testing.T) {
	data := volume(t)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	var calls int
	go func() {
		_, err := Populate(context.Background(), data, func(dst string) error {
			close(started)
			<-release
			return writeSeed(&calls)(dst)
		}, quiet)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("first copy did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var second int
	_, err := Populate(ctx, data, writeSeed(&second), quiet)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another copy") || second != 0 {
		t.Fatalf("Populate during another's copy = %v, %d calls; want it waiting until its deadline", err, second)
	}
	close(release)
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("first copy did not end")
	}
	if filled, err := Populate(context.Background(), data, writeSeed(&second), quiet); filled || err != nil || second != 0 {
		t.Fatalf("Populate after the copy: %v, %v; want nothing copied", filled, err)
	}
}
