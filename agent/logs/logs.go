// Package logs reads a replica's log file (the runtime appends the
// replica's output to it, see exec.Replica.LogPath): the last N lines, then
// optionally new lines as they are written. Following polls the file at a
// short interval rather than using inotify, so it works on any filesystem
// and needs no watcher to clean up; it ends when the context does.
//
// Lines are passed without their trailing newline. A last line without a
// newline is passed when not following; while following it is held until
// its newline arrives. A file that shrinks (truncated or replaced) is read
// again from its start.
package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// DefaultPoll is how often a followed file is checked for new data.
const DefaultPoll = 250 * time.Millisecond

// Options say what to read.
type Options struct {
	// Tail is how many lines from before the call to pass (0: all).
	Tail int
	// Follow keeps reading new lines until the context ends.
	Follow bool
	// Poll is the follow interval (DefaultPoll when 0).
	Poll time.Duration
}

// Read passes the lines of the file at path to fn as Options say. It
// returns nil when the file is read (or, when following, when ctx ends),
// fn's error when fn fails. A missing file is fs.ErrNotExist unless
// following, in which case Read waits for it to appear.
func Read(ctx context.Context, path string, opts Options, fn func(line []byte) error) error {
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	f, err := open(ctx, path, opts.Follow, poll)
	if err != nil || f == nil {
		return err
	}
	defer f.Close()

	start := int64(0)
	if opts.Tail > 0 {
		if start, err = tailOffset(f, opts.Tail); err != nil {
			return fmt.Errorf("find last %d lines of %s: %w", opts.Tail, path, err)
		}
	}
	r := &reader{f: f, path: path, offset: start, fn: fn}
	if !opts.Follow {
		if err := r.readAvailable(); err != nil {
			return err
		}
		return r.flushPartial()
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if err := r.readAvailable(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// open opens path; when following it waits for the file to exist. It
// returns nil, nil when ctx ends first.
func open(ctx context.Context, path string, follow bool, poll time.Duration) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if err == nil {
			return f, nil
		}
		if !follow || !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open log %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(poll):
		}
	}
}

// reader passes complete lines from offset on.
type reader struct {
	f       *os.File
	path    string
	offset  int64
	partial []byte
	fn      func([]byte) error
}

func (r *reader) readAvailable() error {
	info, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("stat log %s: %w", r.path, err)
	}
	if info.Size() < r.offset {
		// Truncated: what we held belongs to the old content.
		r.offset, r.partial = 0, nil
	}
	if info.Size() == r.offset {
		return nil
	}
	br := bufio.NewReader(io.NewSectionReader(r.f, r.offset, info.Size()-r.offset))
	for {
		chunk, err := br.ReadSlice('\n')
		r.offset += int64(len(chunk))
		if err == nil {
			line := chunk[:len(chunk)-1]
			if len(r.partial) > 0 {
				line = append(r.partial, line...)
				r.partial = nil
			}
			if err := r.fn(bytes.Clone(line)); err != nil {
				return err
			}
			continue
		}
		r.partial = append(r.partial, chunk...)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return fmt.Errorf("read log %s: %w", r.path, err)
		}
	}
}

func (r *reader) flushPartial() error {
	if len(r.partial) == 0 {
		return nil
	}
	line := r.partial
	r.partial = nil
	return r.fn(line)
}

// tailChunk is how much tailOffset reads backwards at a time.
const tailChunk = 64 << 10

// tailOffset returns the offset of the first of the last n lines of f. A
// final line without a newline counts as a line.
func tailOffset(f *os.File, n int) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := info.Size()
	if end == 0 {
		return 0, nil
	}
	// The file's last byte ends the last line whether or not it is a
	// newline; count newlines before it.
	pos := end - 1
	found := 0
	buf := make([]byte, tailChunk)
	for pos > 0 {
		size := min(int64(tailChunk), pos)
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil {
			return 0, err
		}
		for i := size - 1; i >= 0; i-- {
			if buf[i] != '\n' {
				continue
			}
			found++
			if found == n {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}
