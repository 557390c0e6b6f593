package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
)

// ServingLine is jacod's "ready to serve" log line, in the text or the
// JSON format (docs/adr/0033-logs.md); its group is the bound TCP
// address, which is how a caller learns a port the kernel picked.
var ServingLine = regexp.MustCompile(`msg="jacod serving".* listen=(\S+)|"msg":"jacod serving".*"listen":"([^"]+)"`)

// startMarker begins the harness's line before each start's output.
func startMarker(harness string) string { return "=== " + harness + ": start " }

// Log is everything the process wrote, across its starts, with the
// harness's marker lines between them.
func (p *Process) Log() (string, error) {
	b, err := os.ReadFile(p.spec.Log)
	if err != nil {
		return "", fmt.Errorf("log of %s: %w", p.spec.Name, err)
	}
	return string(b), nil
}

// LogSince is what the process wrote since its latest start.
func (p *Process) LogSince() (string, error) {
	l, err := p.Log()
	if i := strings.LastIndex(l, startMarker(p.spec.Harness)); i >= 0 {
		return l[i:], err
	}
	return l, err
}

// lineWatch copies a process's output to its log and hands over what
// the first line matching ready says (see Start).
type lineWatch struct {
	mu      sync.Mutex
	file    *os.File
	ready   *regexp.Regexp
	partial []byte
	done    bool
	found   chan string // buffered, receives at most one value
}

func newLineWatch(file *os.File, ready *regexp.Regexp) *lineWatch {
	return &lineWatch{file: file, ready: ready, found: make(chan string, 1)}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.file.Write(p); err != nil {
		return 0, err
	}
	if w.done {
		return len(p), nil
	}
	// A line may come in pieces across writes: match whole lines only.
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		w.partial = w.partial[i+1:]
		if m := w.ready.FindSubmatch(line); m != nil {
			w.found <- firstGroup(m)
			w.done, w.partial = true, nil
			break
		}
	}
	return len(p), nil
}

// firstGroup is a match's first non-empty group, or the whole match.
func firstGroup(m [][]byte) string {
	for _, g := range m[1:] {
		if len(g) > 0 {
			return string(g)
		}
	}
	return string(m[0])
}
