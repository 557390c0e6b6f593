package stackdump

import "testing"

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
func TestCondense(t *testing.T) {
	want := "2× [select] runtime.selectgo <- manager/state/store.(*Store).forward <- manager/state/store.(*Store).watch.gowrap2\n" +
		"1× [semacquire] sync.(*WaitGroup).Wait <- node.(*Node).Stop.func1 <- node.(*Node).Stop\n"
	if got := Condense(sampleDump); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := Condense(`time=... level=INFO msg="jacod serving"`); got != "" {
		t.Errorf("output without a dump: got %q, want empty", got)
	}
}
