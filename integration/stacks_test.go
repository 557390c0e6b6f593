package integration

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quitTimeout bounds how long a daemon that did not stop on SIGTERM has to
// write its goroutines' stacks after SIGQUIT.
const quitTimeout = 5 * time.Second

// killWithStacks ends a daemon that did not stop in time: SIGQUIT first, on
// which the Go runtime writes every goroutine's stack to the daemon's
// output and exits, then SIGKILL if that did not end it either.
func killWithStacks(p *os.Process, exited <-chan struct{}) {
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

// stuckGoroutines condenses the goroutine dump at the end of a daemon's
// output to the stacks that pass through the project's code, each with
// the call it waits in, identical ones once with their count: what a stop
// that hung was waiting for. Empty when the output holds no dump.
func stuckGoroutines(output string) string {
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

// A trimmed dump as the Go runtime writes it on SIGQUIT (addresses cut
// short): two goroutines in the same wait, one in the runtime only.
const sampleDump = `time=... level=INFO msg="jacod serving"
SIGQUIT: quit
PC=0x499921 m=0 sigcode=0

goroutine 3 gp=0x3598 m=nil [GC sweep wait]:
runtime.gopark(0x1?, 0x0?)
	/usr/local/go/src/runtime/proc.go:462 +0xce fp=0x3598 sp=0x3598 pc=0x4902
runtime.bgsweep(0x3598)
	/usr/local/go/src/runtime/mgcsweep.go:324 +0x151 fp=0x3598 sp=0x3598 pc=0x43fe
created by runtime.gcenable in goroutine 1
	/usr/local/go/src/runtime/mgc.go:214 +0x66

goroutine 31 gp=0x3598 m=nil [select, 2 minutes]:
runtime.gopark(0x3598?, 0x2?)
	/usr/local/go/src/runtime/proc.go:462 +0xce fp=0x3598 sp=0x3598 pc=0x4902
runtime.selectgo(0x3598, 0x3598, 0x0?, 0x0, 0x0?, 0x1)
	/usr/local/go/src/runtime/select.go:351 +0xaa5 fp=0x3598 sp=0x3598 pc=0x46c2
github.com/jaco-project/jaco/manager/state/store.(*Store).forward(0x3598, {0x1753790, 0x3598}, {0x1747db8?, 0x3598?}, 0x3598, 0x3598)
	/work/main/manager/state/store/watch.go:159 +0x1bc fp=0x3598 sp=0x3598 pc=0xe47d
github.com/jaco-project/jaco/manager/state/store.(*Store).watch.gowrap2()
	/work/main/manager/state/store/watch.go:132 +0x2f fp=0x3598 sp=0x3598 pc=0xe479
runtime.goexit({})
	/usr/local/go/src/runtime/asm_amd64.s:1771 +0x1 fp=0x3598 sp=0x3598 pc=0x497d
created by github.com/jaco-project/jaco/manager/state/store.(*Store).watch in goroutine 68
	/work/main/manager/state/store/watch.go:132 +0x46a

goroutine 1066 gp=0x3598 m=nil [select]:
runtime.gopark(0x3598?, 0x2?)
	/usr/local/go/src/runtime/proc.go:462 +0xce fp=0x3598 sp=0x3598 pc=0x4902
runtime.selectgo(0x3598, 0x3598, 0x3598?, 0x0, 0x3598?, 0x1)
	/usr/local/go/src/runtime/select.go:351 +0xaa5 fp=0x3598 sp=0x3598 pc=0x46c2
github.com/jaco-project/jaco/manager/state/store.(*Store).forward(0x3598, {0x1753790, 0x3598}, {0x1747db8?, 0x3598?}, 0x3598, 0x3598)
	/work/main/manager/state/store/watch.go:159 +0x1bc fp=0x3598 sp=0x3598 pc=0xe47d
github.com/jaco-project/jaco/manager/state/store.(*Store).watch.gowrap2()
	/work/main/manager/state/store/watch.go:132 +0x2f fp=0x3598 sp=0x3598 pc=0xe479
created by github.com/jaco-project/jaco/manager/state/store.(*Store).watch in goroutine 1059
	/work/main/manager/state/store/watch.go:132 +0x46a

goroutine 1 gp=0x3598 m=nil [semacquire]:
sync.(*WaitGroup).Wait(0x3598)
	/usr/local/go/src/sync/waitgroup.go:118 +0x48 fp=0x3598 sp=0x3598 pc=0x4b1c
github.com/jaco-project/jaco/node.(*Node).Stop.func1()
	/work/main/node/node.go:405 +0x5e5 fp=0x3598 sp=0x3598 pc=0x1206
sync.(*Once).doSlow(0x3598, 0x3598)
	/usr/local/go/src/sync/once.go:78 +0xac fp=0x3598 sp=0x3598 pc=0x4a9e
github.com/jaco-project/jaco/node.(*Node).Stop(0x3598)
	/work/main/node/node.go:347 +0x45 fp=0x3598 sp=0x3598 pc=0x1205

rax    0x0
`

// The condensed dump names, once with a count, each wait a goroutine of
// the project's code is in, most frequent first, and leaves out the
// runtime's own goroutines and the log before the dump.
func TestStuckGoroutinesCondensesADump(t *testing.T) {
	want := "2× [select] runtime.selectgo <- manager/state/store.(*Store).forward <- manager/state/store.(*Store).watch.gowrap2\n" +
		"1× [semacquire] sync.(*WaitGroup).Wait <- node.(*Node).Stop.func1 <- node.(*Node).Stop\n"
	if got := stuckGoroutines(sampleDump); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := stuckGoroutines(`time=... level=INFO msg="jacod serving"`); got != "" {
		t.Errorf("output without a dump: got %q, want empty", got)
	}
}
