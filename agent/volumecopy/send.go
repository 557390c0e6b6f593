// Package volumecopy is the wire format of a volume move
// (docs/adr/0064-volume-move.md): the source walks the volume's data and
// streams every entry (directories, regular files, symlinks, fifos,
// devices) with its owner, mode and times, each regular file's bytes
// followed by their SHA-256; the destination writes them under a root it
// cannot leave, checks each sum, and keeps a resume point so that a copy
// cut short goes on from the files (and the offset in the file) it had.
// It knows nothing of sessions, stores or certificates.
package volumecopy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
)

// chunkSize is the data carried by one message: well under gRPC's 4 MiB
// limit, large enough that per-message costs do not show.
const chunkSize = 1 << 20

// entry is one file of the volume as the walk found it.
type entry struct {
	path string
	hdr  *api.VolumeEntry
}

// walk lists root's entries in walk order (lexical within each
// directory, a directory before its content): the order both ends count
// resume points in, stable while nothing writes the volume.
func walk(root string) ([]entry, int64, error) {
	var out []entry
	var total int64
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		h := &api.VolumeEntry{
			Index: uint64(len(out)), Path: filepath.ToSlash(rel),
			Mode: st.Mode & 0o7777, Uid: st.Uid, Gid: st.Gid,
			MtimeNs: st.Mtim.Nano(), AtimeNs: st.Atim.Nano(),
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			h.Kind = api.VolumeEntry_KIND_DIR
		case unix.S_IFREG:
			h.Kind, h.Size = api.VolumeEntry_KIND_FILE, st.Size
			total += st.Size
		case unix.S_IFLNK:
			h.Kind = api.VolumeEntry_KIND_SYMLINK
			if h.Link, err = os.Readlink(p); err != nil {
				return fmt.Errorf("read link %s: %w", p, err)
			}
		case unix.S_IFIFO:
			h.Kind = api.VolumeEntry_KIND_FIFO
		case unix.S_IFCHR, unix.S_IFBLK:
			h.Kind, h.Rdev = api.VolumeEntry_KIND_DEVICE, st.Rdev
			h.Mode |= st.Mode & unix.S_IFMT
		default:
			return nil // sockets belong to a process that is gone
		}
		out = append(out, entry{path: p, hdr: h})
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("walk volume data: %w", err)
	}
	return out, total, nil
}

// Send streams the volume data at root from req's resume point.
func Send(ctx context.Context, root string, req *api.ReadVolumeRequest, send func(*api.VolumeChunk) error) error {
	entries, total, err := walk(root)
	if err != nil {
		return err
	}
	from := req.GetResumeIndex()
	if from > uint64(len(entries)) || from > 0 && entries[from-1].hdr.GetPath() != req.GetResumePath() {
		// The volume is not the one the destination began with: it must
		// start over, which it does on this code.
		return status.Errorf(codes.FailedPrecondition, "resume point %d (%s) does not match this volume: start over", from, req.GetResumePath())
	}
	if err := send(&api.VolumeChunk{Part: &api.VolumeChunk_Start{Start: &api.VolumeStreamStart{Entries: uint64(len(entries)), BytesTotal: total}}}); err != nil {
		return err
	}
	buf := make([]byte, chunkSize)
	for i, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := e.hdr
		h.Skip = uint64(i) < from
		if uint64(i) == from && h.GetKind() == api.VolumeEntry_KIND_FILE {
			h.Offset = min(max(req.GetResumeOffset(), 0), h.GetSize())
		}
		if err := send(&api.VolumeChunk{Part: &api.VolumeChunk_Entry{Entry: h}}); err != nil {
			return err
		}
		if h.GetSkip() || h.GetKind() != api.VolumeEntry_KIND_FILE {
			continue
		}
		if err := sendFile(e.path, h.GetOffset(), buf, send); err != nil {
			return err
		}
	}
	return send(&api.VolumeChunk{Part: &api.VolumeChunk_End{End: &api.VolumeStreamEnd{Entries: uint64(len(entries))}}})
}

// sendFile sends path's bytes from offset, then the SHA-256 of all of
// them: the destination hashes what it had before offset with what came.
func sendFile(path string, offset int64, buf []byte, send func(*api.VolumeChunk) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, offset); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if err := send(&api.VolumeChunk{Part: &api.VolumeChunk_Data{Data: buf[:n]}}); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	return send(&api.VolumeChunk{Part: &api.VolumeChunk_Sum{Sum: h.Sum(nil)}})
}
