package volumecopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/durable"
)

// ErrChecksum is a file whose bytes do not match the sum the source sent:
// the file is deleted, and the next attempt copies it again from its start.
var ErrChecksum = errors.New("checksum mismatch")

// Resume is where a copy stands: entries before Index are written and
// verified, the last of them at Path; Next is the entry at Index, whose
// bytes on disk (its size) are asked from the source to go on from.
type Resume struct {
	Index uint64 `json:"index"`
	Path  string `json:"path"`
	Next  string `json:"next,omitempty"`
}

// Stream is the source's side of one attempt: a ReadVolume stream.
type Stream interface {
	Recv() (*api.VolumeChunk, error)
}

// Receiver fills Dir (a volume's _data) from a source, keeping its resume
// point in the file State between attempts.
type Receiver struct {
	Dir   string
	State string
	// Progress, when set, is told the bytes verified (resumed ones
	// included) and the volume's total, at most every ProgressEvery.
	Progress      func(done, total int64)
	ProgressEvery time.Duration
}

// LoadResume reads the resume point (none: start).
func (r *Receiver) LoadResume() (Resume, error) {
	var rs Resume
	b, err := os.ReadFile(r.State)
	if errors.Is(err, os.ErrNotExist) || len(bytes.TrimSpace(b)) == 0 {
		return rs, nil
	}
	if err != nil {
		return rs, fmt.Errorf("read resume point: %w", err)
	}
	if err := json.Unmarshal(b, &rs); err != nil {
		return Resume{}, nil // a torn write: start over
	}
	return rs, nil
}

// checkpointEvery is how often a copy under way saves its resume point:
// what a killed agent's next attempt need not copy again.
const checkpointEvery = 10 * time.Second

// saveResume records rs once what it counts as verified is on disk: the
// file system holding Dir is synced first, so that a resume point never
// names data a power loss took.
func (r *Receiver) saveResume(rs Resume) error {
	if err := durable.SyncFS(r.Dir); err != nil {
		return fmt.Errorf("save resume point: %w", err)
	}
	b, _ := json.Marshal(rs)
	if err := durable.WriteFile(r.State, b, 0o600); err != nil {
		return fmt.Errorf("save resume point: %w", err)
	}
	return nil
}

// Request is what to ask the source for: the volume from the resume point.
func (r *Receiver) Request(volumeID string, generation uint64) (*api.ReadVolumeRequest, error) {
	rs, err := r.LoadResume()
	if err != nil {
		return nil, err
	}
	req := &api.ReadVolumeRequest{VolumeId: volumeID, Generation: generation, ResumeIndex: rs.Index, ResumePath: rs.Path}
	if rs.Next != "" && checkPath(rs.Next) == nil {
		root, err := os.OpenRoot(r.Dir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", r.Dir, err)
		}
		defer root.Close()
		if fi, err := root.Lstat(rs.Next); err == nil && fi.Mode().IsRegular() {
			req.ResumeOffset = fi.Size()
		}
	}
	return req, nil
}

// Start forgets the resume point and empties Dir: the source refused it.
func (r *Receiver) Start() error {
	if err := os.Remove(r.State); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget resume point: %w", err)
	}
	ents, err := os.ReadDir(r.Dir)
	if err != nil {
		return fmt.Errorf("empty %s: %w", r.Dir, err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(path.Join(r.Dir, e.Name())); err != nil {
			return fmt.Errorf("empty %s: %w", r.Dir, err)
		}
	}
	return nil
}

// IsRestart reports whether err is the source refusing the resume point.
func IsRestart(err error) bool { return status.Code(err) == codes.FailedPrecondition }

// Receive writes one attempt's stream under Dir, from the resume point
// req asked for. It returns nil only once the stream ended with every
// entry written, every sum verified and the whole synced to disk; on any
// other end the resume point is saved for the next attempt.
func (r *Receiver) Receive(ctx context.Context, req *api.ReadVolumeRequest, s Stream) (err error) {
	root, err := os.OpenRoot(r.Dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", r.Dir, err)
	}
	defer root.Close()
	w := &writer{root: root, rs: Resume{Index: req.GetResumeIndex(), Path: req.GetResumePath()}}
	defer func() {
		if err != nil {
			w.close()
			if serr := r.saveResume(w.rs); serr != nil {
				err = errors.Join(err, serr)
			}
		}
	}()
	var total, done int64
	var last time.Time
	checkpoint := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("the volume stream ended early")
		}
		if err != nil {
			return fmt.Errorf("receive volume: %w", err)
		}
		switch p := m.GetPart().(type) {
		case *api.VolumeChunk_Start:
			total = p.Start.GetBytesTotal()
		case *api.VolumeChunk_Entry:
			if err := w.entry(p.Entry); err != nil {
				return err
			}
			if p.Entry.GetSkip() && p.Entry.GetKind() == api.VolumeEntry_KIND_FILE {
				done += p.Entry.GetSize()
			}
			done += p.Entry.GetOffset()
		case *api.VolumeChunk_Data:
			if err := w.data(p.Data); err != nil {
				return err
			}
			done += int64(len(p.Data))
		case *api.VolumeChunk_Sum:
			if err := w.sum(p.Sum); err != nil {
				return err
			}
		case *api.VolumeChunk_End:
			if w.cur != nil || p.End.GetEntries() != w.rs.Index {
				return fmt.Errorf("the volume stream ended after %d of %d entries", w.rs.Index, p.End.GetEntries())
			}
			if err := w.finish(); err != nil {
				return err
			}
			if r.Progress != nil {
				r.Progress(total, total)
			}
			return nil
		}
		if r.Progress != nil && time.Since(last) >= r.ProgressEvery {
			last = time.Now()
			r.Progress(done, total)
		}
		if time.Since(checkpoint) >= checkpointEvery {
			checkpoint = time.Now()
			if err := r.saveResume(w.rs); err != nil {
				return err
			}
		}
	}
}

// writer applies a stream's entries under root.
type writer struct {
	root *os.Root
	rs   Resume
	dirs []*api.VolumeEntry // their times and modes are set last
	cur  *api.VolumeEntry   // the file whose data is coming
	f    *os.File
	h    hash.Hash
}

func (w *writer) close() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

func (w *writer) entry(e *api.VolumeEntry) error {
	if w.cur != nil {
		return fmt.Errorf("entry %s came before the sum of %s", e.GetPath(), w.cur.GetPath())
	}
	if err := checkPath(e.GetPath()); err != nil {
		return err
	}
	if e.GetKind() == api.VolumeEntry_KIND_DIR {
		w.dirs = append(w.dirs, e)
	}
	if e.GetSkip() {
		return w.done(e)
	}
	if e.GetIndex() != w.rs.Index {
		return fmt.Errorf("entry %d (%s) came where %d was expected", e.GetIndex(), e.GetPath(), w.rs.Index)
	}
	p := e.GetPath()
	switch e.GetKind() {
	case api.VolumeEntry_KIND_DIR:
		if p != "." {
			if err := w.root.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("make directory %s: %w", p, err)
			}
		}
		return w.done(e) // owner, mode and times once its content is in
	case api.VolumeEntry_KIND_FILE:
		return w.open(e)
	case api.VolumeEntry_KIND_SYMLINK:
		if err := w.replace(p); err != nil {
			return err
		}
		if err := w.root.Symlink(e.GetLink(), p); err != nil {
			return fmt.Errorf("make symlink %s: %w", p, err)
		}
	case api.VolumeEntry_KIND_FIFO, api.VolumeEntry_KIND_DEVICE:
		if err := w.replace(p); err != nil {
			return err
		}
		mode := e.GetMode()
		if e.GetKind() == api.VolumeEntry_KIND_FIFO {
			mode |= unix.S_IFIFO
		}
		if err := w.at(p, func(fd int, base string) error { return unix.Mknodat(fd, base, mode, int(e.GetRdev())) }); err != nil {
			return fmt.Errorf("make node %s: %w", p, err)
		}
	default:
		return fmt.Errorf("entry %s: unknown kind %v", p, e.GetKind())
	}
	if err := w.meta(e); err != nil {
		return err
	}
	return w.done(e)
}

// open starts the file of e at its offset: the bytes before it are on
// disk from an earlier attempt and go into the sum first.
func (w *writer) open(e *api.VolumeEntry) error {
	p := e.GetPath()
	flags := os.O_RDWR | os.O_CREATE
	if e.GetOffset() == 0 {
		flags |= os.O_TRUNC
		if err := w.replace(p); err != nil {
			return err
		}
	}
	f, err := w.root.OpenFile(p, flags, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	w.f, w.h, w.cur = f, sha256.New(), e
	w.rs.Next = p
	if _, err := io.CopyN(w.h, f, e.GetOffset()); err != nil {
		return fmt.Errorf("read %s back: %w", p, err)
	}
	if err := f.Truncate(e.GetOffset()); err != nil {
		return fmt.Errorf("truncate %s: %w", p, err)
	}
	if _, err := f.Seek(e.GetOffset(), io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", p, err)
	}
	return nil
}

func (w *writer) data(b []byte) error {
	if w.f == nil {
		return errors.New("file data came outside a file")
	}
	w.h.Write(b)
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", w.cur.GetPath(), err)
	}
	return nil
}

func (w *writer) sum(s []byte) error {
	e := w.cur
	if e == nil {
		return errors.New("a sum came outside a file")
	}
	got := w.h.Sum(nil)
	w.close()
	w.cur = nil
	if !bytes.Equal(got, s) {
		// Refused and gone: the next attempt asks for it from its start.
		w.rs.Next = ""
		if err := w.root.Remove(e.GetPath()); err != nil {
			return fmt.Errorf("%s: %w; removing it: %w", e.GetPath(), ErrChecksum, err)
		}
		return fmt.Errorf("%s: %w (sha256 %x, the source sent %x)", e.GetPath(), ErrChecksum, got, s)
	}
	if err := w.meta(e); err != nil {
		return err
	}
	return w.done(e)
}

// done moves the resume point past e.
func (w *writer) done(e *api.VolumeEntry) error {
	w.rs = Resume{Index: e.GetIndex() + 1, Path: e.GetPath()}
	return nil
}

// replace removes what an earlier attempt left at p (not a directory).
func (w *writer) replace(p string) error {
	if err := w.root.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", p, err)
	}
	return nil
}

// at runs op on p's parent directory (opened inside the root, so no
// symlink leads out of it) and p's last element.
func (w *writer) at(p string, op func(fd int, base string) error) error {
	dir, base := path.Split(p)
	if dir == "" {
		dir = "."
	}
	d, err := w.root.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return op(int(d.Fd()), base)
}

// meta gives e's owner, mode and times to what was written at its path.
func (w *writer) meta(e *api.VolumeEntry) error {
	err := w.at(e.GetPath(), func(fd int, base string) error {
		if err := unix.Fchownat(fd, base, int(e.GetUid()), int(e.GetGid()), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
		if e.GetKind() != api.VolumeEntry_KIND_SYMLINK {
			// After chown, which clears setuid and setgid.
			if err := unix.Fchmodat(fd, base, e.GetMode()&0o7777, 0); err != nil {
				return fmt.Errorf("chmod: %w", err)
			}
		}
		ts := []unix.Timespec{unix.NsecToTimespec(e.GetAtimeNs()), unix.NsecToTimespec(e.GetMtimeNs())}
		if err := unix.UtimesNanoAt(fd, base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("set times: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", e.GetPath(), err)
	}
	return nil
}

// finish sets the directories' owners, modes and times, deepest first
// (writing into a directory changes its times), and syncs the file
// system holding them.
func (w *writer) finish() error {
	for _, d := range slices.Backward(w.dirs) {
		if err := w.meta(d); err != nil {
			return err
		}
	}
	return durable.SyncFS(w.root.Name())
}

// checkPath refuses a path that is not inside the volume.
func checkPath(p string) error {
	if p != "." && (!filepath.IsLocal(p) || path.Clean(p) != p) {
		return fmt.Errorf("entry path %q is not inside the volume", p)
	}
	return nil
}
