// Package logs keeps and reads the logs of a node's replicas.
//
// A runtime appends a replica's raw output (stdout and stderr
// interleaved) to the replica's raw file, RawPath (see
// exec.Replica.LogPath). A Collector, run by the agent for as long as the
// replica is on the node, moves that output line by line into the
// replica's kept log, Path: each line prefixed with the time the node
// wrote it down, a line longer than MaxLine cut with a marker, the file
// rotated to Path+".1" when it passes MaxFile (so a replica's log takes at
// most twice that). The kept log outlives the replica: Retire records it
// under its service slot and deletes the kept logs of older ended
// replicas beyond Keep per slot (and MaxKept per node), so the logs of a
// crash-looping replica still say why it crashed after it was replaced.
//
// Read passes a kept log's lines: those at or after a time, the last N of
// them, then optionally new lines as they are written. Following polls the
// file rather than using inotify, so it works on any filesystem and needs
// no watcher to clean up; it ends when the context does, and it carries
// on into the new file when the log rotates.
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
	// Since leaves out lines written down before it (zero: none).
	Since time.Time
	// Tail is how many of the lines from before the call (at or after
	// Since) to pass: the last ones (0: all).
	Tail int
	// Follow keeps reading new lines until the context ends.
	Follow bool
	// Poll is the follow interval (DefaultPoll when 0).
	Poll time.Duration
}

// Line is one line of a kept log, without its newline.
type Line struct {
	// Time is when the node wrote the line down (zero when the line
	// carries no time: a log kept by an older agent).
	Time time.Time
	Data []byte
}

// parseLine splits a kept log line into its time and data.
func parseLine(b []byte) Line {
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if t, err := time.Parse(time.RFC3339Nano, string(b[:i])); err == nil {
			return Line{Time: t, Data: b[i+1:]}
		}
	}
	return Line{Data: b}
}

// Read passes the lines of the kept log at path (and of its rotated part,
// path+".1") to fn as Options say. It returns nil when the log is read
// (or, when following, when ctx ends), fn's error when fn fails. A missing
// log is fs.ErrNotExist unless following, in which case Read waits for it
// to appear.
func Read(ctx context.Context, path string, opts Options, fn func(Line) error) error {
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	pass := func(l Line) error {
		if !opts.Since.IsZero() && l.Time.Before(opts.Since) {
			return nil
		}
		return fn(l)
	}
	// The current file is opened before the rotated one: a rotation in
	// between then repeats lines rather than losing them.
	cur, err := os.Open(path)
	if err != nil && (!errors.Is(err, fs.ErrNotExist) || !opts.Follow) {
		return fmt.Errorf("open log %s: %w", path, err)
	}
	var history []Line
	var offset int64
	if cur != nil {
		if offset, err = readHistory(cur, path, opts, &history); err != nil {
			cur.Close()
			return err
		}
	}
	for _, l := range history {
		if err := fn(l); err != nil {
			if cur != nil {
				cur.Close()
			}
			return err
		}
	}
	if !opts.Follow {
		if cur != nil {
			cur.Close()
		}
		return nil
	}
	f := &follower{path: path, f: cur, r: reader{path: path, offset: offset, fn: func(b []byte) error { return pass(parseLine(b)) }}}
	return f.run(ctx, poll)
}

// readHistory adds the lines of the rotated log and of cur (up to its
// current size) that Options let through to history, keeping only the
// last Tail. It returns the offset in cur following starts from: after
// the last complete line.
func readHistory(cur *os.File, path string, opts Options, history *[]Line) (int64, error) {
	old, err := os.Open(path + ".1")
	switch {
	case err == nil:
		_, err = readLines(old, opts, history)
		old.Close()
		if err != nil {
			return 0, fmt.Errorf("read log %s.1: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("open log %s.1: %w", path, err)
	}
	offset, err := readLines(cur, opts, history)
	if err != nil {
		return 0, fmt.Errorf("read log %s: %w", path, err)
	}
	return offset, nil
}

// readLines reads f up to its current size into history and returns the
// offset after its last complete line. A kept log's lines are written
// whole; a last line without its newline is one being written, left to
// following.
func readLines(f *os.File, opts Options, history *[]Line) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	r := reader{path: f.Name(), fn: func(b []byte) error {
		l := parseLine(b)
		if !opts.Since.IsZero() && l.Time.Before(opts.Since) {
			return nil
		}
		*history = append(*history, l)
		if opts.Tail > 0 && len(*history) > 2*opts.Tail {
			// Drop the oldest in bulk so keeping the tail costs O(1)
			// per line.
			*history = append((*history)[:0], (*history)[len(*history)-opts.Tail:]...)
		}
		return nil
	}}
	if err := r.readTo(f, info.Size()); err != nil {
		return 0, err
	}
	if opts.Tail > 0 && len(*history) > opts.Tail {
		*history = append((*history)[:0], (*history)[len(*history)-opts.Tail:]...)
	}
	return r.offset - int64(len(r.partial)), nil
}

// follower passes the lines appended to a log, into the new file when it
// rotates.
type follower struct {
	path string
	f    *os.File // nil until the log exists
	r    reader
}

func (fl *follower) run(ctx context.Context, poll time.Duration) error {
	defer func() {
		if fl.f != nil {
			fl.f.Close()
		}
	}()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if err := fl.step(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// step reads what is new, and moves on to the file now at path when the
// one read was rotated away (after reading the rest of it).
func (fl *follower) step() error {
	if fl.f != nil {
		if err := fl.r.readAvailable(fl.f); err != nil {
			return err
		}
	}
	now, err := os.Stat(fl.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat log %s: %w", fl.path, err)
	}
	if fl.f != nil {
		held, err := fl.f.Stat()
		if err != nil {
			return fmt.Errorf("stat log %s: %w", fl.path, err)
		}
		if os.SameFile(held, now) {
			return nil
		}
		// Rotated: the old file is complete; read what was added to it
		// since the read above.
		if err := fl.r.readAvailable(fl.f); err != nil {
			return err
		}
		fl.f.Close()
		fl.f = nil
	}
	f, err := os.Open(fl.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open log %s: %w", fl.path, err)
	}
	fl.f, fl.r.offset, fl.r.partial = f, 0, nil
	return fl.r.readAvailable(f)
}

// reader passes complete lines from offset on.
type reader struct {
	path    string
	offset  int64
	partial []byte
	fn      func([]byte) error
}

func (r *reader) readAvailable(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat log %s: %w", r.path, err)
	}
	if info.Size() < r.offset {
		// Truncated: what we held belongs to the old content.
		r.offset, r.partial = 0, nil
	}
	return r.readTo(f, info.Size())
}

// readTo passes the complete lines between offset and end, holding a
// last line without its newline in partial.
func (r *reader) readTo(f *os.File, end int64) error {
	if end <= r.offset {
		return nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, r.offset, end-r.offset), 64<<10)
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
