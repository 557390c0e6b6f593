package durable

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// writeBackEvery is how much of a file may wait in the page cache while
// it is written: past it, the kernel is told to write that range back,
// and the writer waits for the range before it. A 49 MB snapshot written
// whole and then synced, on three managers sharing a disk at once, held
// the WAL's fsyncs behind its write-back for 200–350 ms, the slowest
// writes of the rate benchmark (docs/bench/cluster.md); with at most two
// ranges in flight an fsync beside it waits for a megabyte or two. The
// same idea as RocksDB's bytes_per_sync. Zero writes the file whole and
// leaves everything to the final sync (BenchmarkSyncBesideLargeWrite).
var writeBackEvery = 1 << 20

// writeBack writes a file front to back, starting the write-back of each
// writeBackEvery bytes as they are written.
type writeBack struct {
	f *os.File
	// written is the file's length so far; from started on it waits in
	// the page cache, and from waited on its write-back may still run.
	written, started, waited int64
}

func (w *writeBack) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := len(p)
		if writeBackEvery > 0 {
			n = min(n, writeBackEvery-int(w.written-w.started))
		}
		if _, err := w.f.Write(p[:n]); err != nil {
			return total - len(p), fmt.Errorf("write %s: %w", w.f.Name(), err)
		}
		w.written += int64(n)
		p = p[n:]
		if writeBackEvery > 0 && w.written-w.started >= int64(writeBackEvery) {
			w.startWriteBack()
		}
	}
	return total, nil
}

// startWriteBack waits for the range whose write-back started last, and
// starts that of the bytes written since. Its errors are not returned:
// the sync that ends every file is what makes it durable, and reports a
// failed write-back.
func (w *writeBack) startWriteBack() {
	fd := int(w.f.Fd())
	if w.started > w.waited {
		_ = unix.SyncFileRange(fd, w.waited, w.started-w.waited,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
	}
	_ = unix.SyncFileRange(fd, w.started, w.written-w.started, unix.SYNC_FILE_RANGE_WRITE)
	w.waited, w.started = w.started, w.written
}
