package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// rawTruncateAt is how large the raw file may grow, once all of it is
// kept, before the collector empties it. Emptying races with a runtime
// writing at that moment (what it writes between the last read and the
// truncation is lost), so it is done seldom rather than on every pass.
const rawTruncateAt = 1 << 20

// Collector moves one replica's raw output into its kept log until the
// replica is gone (Finish) or the agent stops (its context ends).
type Collector struct {
	c      *copier
	finish chan struct{}
	done   chan struct{}
}

// Collect starts collecting the output of replica id. The offset reached
// in the raw file is kept beside the kept log, so a collector started
// again after an agent restart carries on where the last one stopped.
func (s *Store) Collect(ctx context.Context, id string) *Collector {
	col := &Collector{c: &copier{s: s, id: id}, finish: make(chan struct{}), done: make(chan struct{})}
	go col.run(ctx)
	return col
}

// Finish collects what is left of the raw output (the replica's last
// line even without its newline) and removes the raw file; it returns
// when that is done. Call it once the runtime has removed the replica,
// so nothing writes the raw file any more.
func (col *Collector) Finish() {
	select {
	case <-col.finish:
	default:
		close(col.finish)
	}
	<-col.done
}

// Wait returns once the collector has stopped.
func (col *Collector) Wait() { <-col.done }

func (col *Collector) run(ctx context.Context) {
	defer close(col.done)
	c := col.c
	c.offset = c.loadOffset()
	defer c.closeOut()
	t := time.NewTicker(c.s.poll())
	defer t.Stop()
	for {
		c.logErr(c.pass())
		select {
		case <-ctx.Done():
			// The agent stops; the replica may run on. A held partial
			// line is kept (split in two rather than lost).
			c.logErr(c.pass())
			c.logErr(c.flushPartial())
			return
		case <-col.finish:
			c.logErr(c.pass())
			c.logErr(c.flushPartial())
			c.logErr(c.removeRaw())
			return
		case <-t.C:
		}
	}
}

// copier holds a collector's position.
type copier struct {
	s  *Store
	id string

	offset   int64  // bytes of the raw file consumed
	partial  []byte // a line begun but not ended
	skipping bool   // the rest of a cut line is being dropped

	out     *os.File // the kept log, opened on first write
	outSize int64
	buf     []byte
	stamp   []byte
}

func (c *copier) logErr(err error) {
	if err != nil {
		c.s.logger().Warn("collect replica log", "task_id", c.id, "err", err)
	}
}

// pass moves the raw file's new content into the kept log.
func (c *copier) pass() error {
	raw := c.s.RawPath(c.id)
	f, err := os.Open(raw)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open raw log: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat raw log: %w", err)
	}
	size := info.Size()
	if size < c.offset {
		// Emptied by someone else: start again from its beginning.
		c.offset = 0
	}
	if size == c.offset {
		return nil
	}
	c.stamp = append(c.s.now().UTC().AppendFormat(c.stamp[:0], time.RFC3339Nano), ' ')
	chunk := make([]byte, 64<<10)
	for c.offset < size {
		n, err := f.ReadAt(chunk[:min(int64(len(chunk)), size-c.offset)], c.offset)
		if n > 0 {
			// Consumed even when the write fails: the lines stay
			// queued for the next write rather than being read twice.
			c.add(chunk[:n])
			c.offset += int64(n)
			if werr := c.write(); werr != nil {
				return werr
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read raw log: %w", err)
		}
		if n == 0 {
			break
		}
	}
	if err := c.saveOffset(); err != nil {
		return err
	}
	return c.maybeTruncate(f)
}

// add splits b into lines, cutting those longer than MaxLine.
func (c *copier) add(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !c.skipping {
			room := c.s.maxLine() - len(c.partial)
			if len(part) > room {
				c.partial = append(c.partial, part[:room]...)
				c.emit(true)
				c.skipping = true
			} else {
				c.partial = append(c.partial, part...)
			}
		}
		if i < 0 {
			return
		}
		if !c.skipping {
			c.emit(false)
		}
		c.skipping = false
		b = b[i+1:]
	}
}

// CutMarker ends a line cut at MaxLine.
const CutMarker = " [jaco: line cut]"

// emit queues the partial line, stamped, and empties it.
func (c *copier) emit(cut bool) {
	c.buf = append(c.buf, c.stamp...)
	c.buf = append(c.buf, c.partial...)
	if cut {
		c.buf = append(c.buf, CutMarker...)
	}
	c.buf = append(c.buf, '\n')
	c.partial = c.partial[:0]
}

func (c *copier) flushPartial() error {
	if len(c.partial) == 0 {
		return nil
	}
	if len(c.stamp) == 0 {
		c.stamp = append(c.s.now().UTC().AppendFormat(nil, time.RFC3339Nano), ' ')
	}
	c.emit(false)
	return c.write()
}

// write appends the queued lines to the kept log, rotating it whenever
// the next lines would take it past MaxFile, so neither part ever holds
// much more than MaxFile however much one pass brought.
func (c *copier) write() error {
	for len(c.buf) > 0 {
		if err := c.openOut(); err != nil {
			return err
		}
		n := c.fits(c.s.maxFile() - c.outSize)
		if n == 0 {
			if err := c.rotate(); err != nil {
				return err
			}
			continue
		}
		w, err := c.out.Write(c.buf[:n])
		c.outSize += int64(w)
		c.buf = c.buf[:copy(c.buf, c.buf[n:])]
		if err != nil {
			return fmt.Errorf("write kept log: %w", err)
		}
	}
	return nil
}

// fits is how many bytes of whole queued lines fit in room; an empty log
// takes at least one line however long.
func (c *copier) fits(room int64) int {
	if int64(len(c.buf)) <= room {
		return len(c.buf)
	}
	if room > 0 {
		if i := bytes.LastIndexByte(c.buf[:room], '\n'); i >= 0 {
			return i + 1
		}
	}
	if c.outSize == 0 {
		return bytes.IndexByte(c.buf, '\n') + 1
	}
	return 0
}

// openOut opens the kept log for appending unless it is open.
func (c *copier) openOut() error {
	if c.out != nil {
		return nil
	}
	if err := os.MkdirAll(c.s.keptDir(), 0o755); err != nil {
		return fmt.Errorf("make kept log dir: %w", err)
	}
	f, err := os.OpenFile(c.s.Path(c.id), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open kept log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat kept log: %w", err)
	}
	c.out, c.outSize = f, info.Size()
	return nil
}

// rotate moves the kept log to its one old part.
func (c *copier) rotate() error {
	c.closeOut()
	path := c.s.Path(c.id)
	if err := os.Rename(path, path+".1"); err != nil {
		return fmt.Errorf("rotate kept log: %w", err)
	}
	return nil
}

func (c *copier) closeOut() {
	if c.out != nil {
		c.out.Close()
		c.out = nil
	}
}

// maybeTruncate empties the raw file once it is large and all kept.
func (c *copier) maybeTruncate(f *os.File) error {
	if c.offset < rawTruncateAt || len(c.partial) > 0 || c.skipping {
		return nil
	}
	info, err := f.Stat()
	if err != nil || info.Size() != c.offset {
		return nil
	}
	if err := os.Truncate(c.s.RawPath(c.id), 0); err != nil {
		return fmt.Errorf("empty raw log: %w", err)
	}
	c.offset = 0
	return c.saveOffset()
}

func (c *copier) offsetPath() string { return c.s.Path(c.id) + ".offset" }

func (c *copier) loadOffset() int64 {
	b, err := os.ReadFile(c.offsetPath())
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		// Unreadable: collect everything again (lines repeated rather
		// than lost).
		return 0
	}
	return n
}

func (c *copier) saveOffset() error {
	if err := os.MkdirAll(c.s.keptDir(), 0o755); err != nil {
		return fmt.Errorf("make kept log dir: %w", err)
	}
	if err := os.WriteFile(c.offsetPath(), strconv.AppendInt(nil, c.offset, 10), 0o640); err != nil {
		return fmt.Errorf("keep raw log offset: %w", err)
	}
	return nil
}

func (c *copier) removeRaw() error {
	for _, p := range []string{c.s.RawPath(c.id), c.offsetPath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove raw log: %w", err)
		}
	}
	return nil
}
