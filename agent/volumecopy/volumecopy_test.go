package volumecopy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/testenv"
)

// chunks is a recorded stream; cut ends it with an error after that many
// messages (0: never), as a broken connection does.
type chunks struct {
	msgs []*api.VolumeChunk
	cut  int
	n    int
}

func (c *chunks) Recv() (*api.VolumeChunk, error) {
	if c.cut > 0 && c.n == c.cut {
		return nil, errors.New("connection reset")
	}
	if c.n == len(c.msgs) {
		return nil, io.EOF
	}
	c.n++
	return c.msgs[c.n-1], nil
}

func record(t *testing.T, src string, req *api.ReadVolumeRequest) *chunks {
	t.Helper()
	c := &chunks{}
	err := Send(context.Background(), src, req, func(m *api.VolumeChunk) error {
		c.msgs = append(c.msgs, proto.CloneOf(m)) // Send reuses its buffer
		return nil
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return c
}

// fill makes a volume with a large file, owners, modes, times, a symlink,
// a fifo and nested directories. Giving owners needs root.
func fill(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "owners need root")
	}
	src := t.TempDir()
	big := make([]byte, 3*chunkSize+123)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	must(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "a", "big"), big, 0o640))
	must(t, os.WriteFile(filepath.Join(src, "a", "b", "small"), []byte("hello"), 0o4755))
	must(t, os.WriteFile(filepath.Join(src, "z"), nil, 0o600))
	must(t, os.Symlink("a/b/small", filepath.Join(src, "link")))
	must(t, unix.Mkfifo(filepath.Join(src, "fifo"), 0o620))
	must(t, os.Lchown(filepath.Join(src, "a", "big"), 1234, 5678))
	must(t, os.Lchown(filepath.Join(src, "link"), 42, 43))
	must(t, os.Chmod(filepath.Join(src, "a", "b", "small"), 0o4755)) // after chown
	old := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	must(t, os.Chtimes(filepath.Join(src, "a", "big"), old, old))
	must(t, unix.Lutimes(filepath.Join(src, "link"), []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}))
	must(t, os.Chtimes(filepath.Join(src, "a"), old, old))
	return src
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// same fails t unless dst holds src's tree with its contents, owners,
// modes and modification times.
func same(t *testing.T, src, dst string) {
	t.Helper()
	want, _, err := walk(src)
	must(t, err)
	got, _, err := walk(dst)
	must(t, err)
	if len(got) != len(want) {
		t.Fatalf("%d entries copied, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i].hdr, got[i].hdr
		w.AtimeNs, g.AtimeNs = 0, 0
		if !proto.Equal(w, g) {
			t.Errorf("entry %s: got %v, want %v", w.GetPath(), g, w)
		}
		if w.GetKind() == api.VolumeEntry_KIND_FILE {
			a, _ := os.ReadFile(want[i].path)
			b, _ := os.ReadFile(got[i].path)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: content differs", w.GetPath())
			}
		}
	}
}

// receiver returns a Receiver into a new empty directory.
func receiver(t *testing.T) *Receiver {
	t.Helper()
	dst := t.TempDir()
	r := &Receiver{Dir: filepath.Join(dst, "_data"), State: filepath.Join(dst, "moving")}
	must(t, os.Mkdir(r.Dir, 0o755))
	return r
}

func TestCopyKeepsOwnersModesTimesAndLinks(t *testing.T) {
	src := fill(t)
	r := receiver(t)
	req, err := r.Request("v1", 1)
	must(t, err)
	must(t, r.Receive(context.Background(), req, record(t, src, req)))
	same(t, src, r.Dir)
}

func TestCopyResumesAfterACutStream(t *testing.T) {
	src := fill(t)
	r := receiver(t)
	ctx := context.Background()
	req, err := r.Request("v1", 1)
	must(t, err)
	// Cut inside a/big's data: start, ., a, a/b, a/b/small + data + sum,
	// a/big, two chunks of it.
	full := record(t, src, req)
	full.cut = 10
	if err := r.Receive(ctx, req, full); err == nil {
		t.Fatal("a cut stream was taken as complete")
	}
	req, err = r.Request("v1", 1)
	must(t, err)
	if req.GetResumeIndex() != 4 || req.GetResumePath() != "a/b/small" || req.GetResumeOffset() != 2*chunkSize {
		t.Fatalf("resume point %d %q offset %d, want 4 a/b/small offset %d",
			req.GetResumeIndex(), req.GetResumePath(), req.GetResumeOffset(), 2*chunkSize)
	}
	var done, total int64
	r.Progress = func(d, tt int64) { done, total = d, tt }
	rest := record(t, src, req)
	var data int
	for _, m := range rest.msgs {
		data += len(m.GetData())
	}
	if want := chunkSize + 123; data != want {
		t.Errorf("resumed stream carried %d bytes of data, want %d (the rest of a/big only)", data, want)
	}
	must(t, r.Receive(ctx, req, rest))
	if done != total || total != 3*chunkSize+123+5 {
		t.Errorf("progress %d of %d at the end", done, total)
	}
	same(t, src, r.Dir)
}

func TestCopyRefusesAChecksumMismatch(t *testing.T) {
	src := fill(t)
	r := receiver(t)
	req, err := r.Request("v1", 1)
	must(t, err)
	c := record(t, src, req)
	for _, m := range c.msgs {
		if d := m.GetData(); len(d) > 0 {
			d[0] ^= 0xff // flipped on the way
			break
		}
	}
	err = r.Receive(context.Background(), req, c)
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Receive = %v, want a checksum mismatch", err)
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, "a", "b", "small")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused file was kept: %v", err)
	}
	// The next attempt copies that file from its start.
	req, err = r.Request("v1", 1)
	must(t, err)
	if req.GetResumeIndex() != 3 || req.GetResumeOffset() != 0 {
		t.Fatalf("resume point %d offset %d after a mismatch, want 3 (a/b/small again) offset 0", req.GetResumeIndex(), req.GetResumeOffset())
	}
	must(t, r.Receive(context.Background(), req, record(t, src, req)))
	b, _ := os.ReadFile(filepath.Join(r.Dir, "a", "b", "small"))
	if string(b) != "hello" {
		t.Errorf("a/b/small = %q after the retry", b)
	}
}

func TestSendRefusesAResumePointOfAnotherVolume(t *testing.T) {
	src := fill(t)
	req := &api.ReadVolumeRequest{ResumeIndex: 2, ResumePath: "elsewhere"}
	err := Send(context.Background(), src, req, func(*api.VolumeChunk) error { return nil })
	if !IsRestart(err) {
		t.Fatalf("Send = %v, want a refusal to resume", err)
	}
}

func TestReceiveRefusesPathsOutsideTheVolume(t *testing.T) {
	r := receiver(t)
	c := &chunks{msgs: []*api.VolumeChunk{
		{Part: &api.VolumeChunk_Start{Start: &api.VolumeStreamStart{Entries: 2}}},
		{Part: &api.VolumeChunk_Entry{Entry: &api.VolumeEntry{Index: 0, Path: ".", Kind: api.VolumeEntry_KIND_DIR, Mode: 0o755}}},
		{Part: &api.VolumeChunk_Entry{Entry: &api.VolumeEntry{Index: 1, Path: "../escape", Kind: api.VolumeEntry_KIND_FILE}}},
	}}
	err := r.Receive(context.Background(), &api.ReadVolumeRequest{}, c)
	if err == nil {
		t.Fatal("a path outside the volume was written")
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(r.Dir), "escape")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("escape written: %v", err)
	}
}
