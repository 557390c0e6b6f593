package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushStep is how much of a file is written before the kernel is told to
// start writing it out. A large file written whole and then synced leaves
// tens of megabytes of dirty pages, and on ext4 (data=ordered) the next
// fsync of any file on the disk, the raft WAL's included, waits for them:
// a 50 MB snapshot held WAL syncs for up to 220 ms (docs/adr/0045). Flushed
// step by step, at most two steps are ever unwritten and those syncs wait
// for a few milliseconds.
const flushStep = 1 << 20

// flushingWriter writes to f and, each time a step is complete, starts its
// writeback and waits for the previous step's. The final Sync makes the
// whole durable; the steps only spread the work out, so a file system
// that refuses them (sync_file_range is advisory) is written unflushed,
// and a disk error they meet is met again by the Sync.
type flushingWriter struct {
	f         *os.File
	off       int64 // bytes written so far
	unflushed bool  // the file system refused a flush: write on without
}

func (w *flushingWriter) write(p []byte) error {
	for len(p) > 0 {
		n := min(int64(len(p)), flushStep-w.off%flushStep)
		if _, err := w.f.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
		w.off += n
		if w.off%flushStep == 0 && !w.unflushed {
			w.unflushed = w.flush(w.off-flushStep) != nil
		}
	}
	return nil
}

// flush starts writing out the step at start and waits until the one
// before it is written.
func (w *flushingWriter) flush(start int64) error {
	fd := int(w.f.Fd())
	if err := unix.SyncFileRange(fd, start, flushStep, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		return err
	}
	if start == 0 {
		return nil
	}
	return unix.SyncFileRange(fd, start-flushStep, flushStep,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
}
