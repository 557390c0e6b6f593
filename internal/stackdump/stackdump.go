// Package stackdump ends a Go process that would not stop with SIGQUIT,
// on which the runtime writes every goroutine's stack to the process's
// output, and condenses that dump to the waits of the project's own code:
// what the test harnesses report when a daemon does not stop in time.
package stackdump

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// quitTimeout bounds how long a daemon that did not stop on SIGTERM has to
// write its goroutines' stacks after SIGQUIT.
const quitTimeout = 5 * time.Second

// QuitThenKill ends a daemon that did not stop in time: SIGQUIT first, on
// which the Go runtime writes every goroutine's stack to the daemon's
// output and exits, then SIGKILL if that did not end it either.
func QuitThenKill(p *os.Process, exited <-chan struct{}) {
	_ = p.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(quitTimeout):
		_ = p.Kill()
		<-exited
	}
}

// jacoFrame marks a stack frame in the project's own code.
const jacoFrame = "jaco-project/jaco/"

// Condense condenses the goroutine dump at the end of a daemon's
// output to the stacks that pass through the project's code, each with
// the call it waits in, identical ones once with their count: what a stop
// that hung was waiting for. Empty when the output holds no dump.
func Condense(output string) string {
	i := strings.LastIndex(output, "SIGQUIT: quit")
	if i < 0 {
		return ""
	}
	counts := map[string]int{}
	for _, block := range strings.Split(output[i:], "\n\n") {
		if key := stackKey(block); key != "" {
			counts[key]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d× %s\n", counts[k], k)
	}
	return b.String()
}

// stackKey is one goroutine's block of a dump as "[state] callee <-
// jaco frames", without arguments, or empty when no frame is the
// project's.
func stackKey(block string) string {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	header := lines[0]
	if !strings.HasPrefix(header, "goroutine ") {
		return ""
	}
	state := header
	if a, b := strings.IndexByte(header, '['), strings.IndexByte(header, ']'); a >= 0 && b > a {
		state = header[a : b+1]
		if comma := strings.IndexByte(state, ','); comma >= 0 {
			state = state[:comma] + "]" // "[select, 3 minutes]": the wait's kind only
		}
	}
	var frames []string
	callee := ""
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by ") {
			continue
		}
		if p := strings.LastIndexByte(l, '('); p > 0 && strings.HasSuffix(l, ")") {
			l = l[:p]
		}
		if strings.Contains(l, jacoFrame) {
			frames = append(frames, strings.TrimPrefix(l[strings.Index(l, jacoFrame):], jacoFrame))
		} else if len(frames) == 0 {
			callee = l
		}
	}
	if len(frames) == 0 {
		return ""
	}
	return state + " " + callee + " <- " + strings.Join(frames, " <- ")
}
