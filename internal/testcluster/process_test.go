package testcluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLineWatchSeesALineSplitAcrossWrites(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := newLineWatch(f, ServingLine)
	for _, p := range []string{"time=1 level=INFO msg=\"raft st", "arted\"\ntime=2 level=INFO msg=\"jacod ser", "ving\" listen=198.18.0.1:7000\n"} {
		select {
		case <-w.found:
			t.Fatalf("found before the whole line was written (at %q)", p)
		default:
		}
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-w.found:
		if got != "198.18.0.1:7000" {
			t.Errorf("found %q, want the address", got)
		}
	default:
		t.Fatal("the serving line was not seen")
	}
	// Later lines, the same one again included, must not send twice.
	if _, err := w.Write([]byte("msg=\"jacod serving\" listen=x\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Name())
	if !strings.Contains(string(b), "raft started") || strings.Count(string(b), "jacod serving") != 2 {
		t.Errorf("the log does not hold everything written: %q", b)
	}
}

func TestServingLineJSON(t *testing.T) {
	m := ServingLine.FindSubmatch([]byte(`{"time":"x","level":"INFO","msg":"jacod serving","listen":"127.0.0.1:4242"}`))
	if m == nil || firstGroup(m) != "127.0.0.1:4242" {
		t.Errorf("JSON serving line: %q", m)
	}
}

func TestProcStateOfThisProcess(t *testing.T) {
	s, err := procState(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Running or sleeping: never stopped, since it is answering.
	if s != 'R' && s != 'S' {
		t.Errorf("this process is in state %c", s)
	}
}

// TestProcessLifecycle: start waits for the ready line and returns its
// address, the pid is the program's, pause and resume act, stop is clean,
// a restart appends to the log, kill reaps.
func TestProcessLifecycle(t *testing.T) {
	p := helper(t, "serve", "127.0.0.1:0", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := p.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Errorf("Start returned %q, want the bound address", addr)
	}
	if err := p.Verify(); err != nil {
		t.Error(err)
	}
	if _, err := p.Start(ctx); err == nil {
		t.Error("a second Start of a running process succeeded")
	}
	pid := p.Pid()
	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := procState(pid); s != 'T' {
		t.Errorf("paused process in state %c", s)
	}
	if err := p.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	// Paused again: Stop must resume it, or its SIGTERM stays pending.
	if err := p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Running() || p.Pid() != 0 || p.ExitErr() != nil {
		t.Fatalf("after Stop: running %v, pid %d, exit %v; want a clean exit", p.Running(), p.Pid(), p.ExitErr())
	}

	if _, err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if !errors.As(p.ExitErr(), &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("after Kill: exit %v, want killed", p.ExitErr())
	}
	if err := p.Kill(); err == nil {
		t.Error("Kill of a process that does not run succeeded")
	}
	log, err := p.Log()
	if err != nil {
		t.Fatal(err)
	}
	if n := lines(log, "=== test: start "); n != 2 {
		t.Errorf("%d start markers in the log, want 2:\n%s", n, log)
	}
	if n := lines(log, "=== test: helper serve exited at "); n != 2 {
		t.Errorf("%d exit markers in the log, want 2:\n%s", n, log)
	}
	since, _ := p.LogSince()
	if !strings.HasPrefix(since, "=== test: start 2 of helper serve at ") || lines(since, "=== test: start ") != 1 {
		t.Errorf("LogSince is not the second start's output:\n%s", since)
	}
}

// TestProcessExitsBeforeReady: Start reports a process that exits before
// its ready line, with how it exited.
func TestProcessExitsBeforeReady(t *testing.T) {
	p := helper(t, "fail", "", nil)
	_, err := p.Start(context.Background())
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Start of a process that exits: %v, want ErrExited with its status", err)
	}
	if p.Running() {
		t.Error("still running")
	}
}

// TestStartTimesOut: a ready line that never comes ends Start with ctx's
// error and leaves the process to the caller.
func TestStartTimesOut(t *testing.T) {
	p := NewProcess(Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, Log: filepath.Join(t.TempDir(), "log"), Ready: ServingLine})
	defer p.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := p.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start: %v, want the deadline", err)
	}
	if !p.Running() {
		t.Error("the process did not keep running")
	}
}

// TestProcessOutlivesItsStartingThread: Pdeathsig fires when the forking
// thread ends; a process started from a goroutine whose locked thread then
// dies must keep running (see Start).
func TestProcessOutlivesItsStartingThread(t *testing.T) {
	p := helper(t, "serve", "127.0.0.1:0", nil)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		_, err := p.Start(context.Background())
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if !p.Running() {
		t.Fatalf("the process died with the thread that asked for it: %v", p.ExitErr())
	}
}

// TestStopEndsAProcessThatIgnoresSIGTERM: after the timeout, SIGQUIT makes
// it dump its stacks, which the error condenses.
func TestStopEndsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p := helper(t, "deaf", "127.0.0.1:0", nil)
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop within 300ms of SIGTERM") || !strings.Contains(err.Error(), "serveHelper") {
		t.Errorf("Stop of a deaf process: %v, want the stacks it waited in", err)
	}
	if p.Running() {
		t.Error("still running after Stop")
	}
}

func TestKillAll(t *testing.T) {
	var ps []*Process
	for range 3 {
		p := NewProcess(Spec{Name: "sleep", Path: "sleep", Args: []string{"60"}, Log: filepath.Join(t.TempDir(), "log"), OwnGroup: true})
		if _, err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	KillAll()
	for _, p := range ps {
		if p.Running() {
			t.Errorf("pid %d survived KillAll", p.Pid())
		}
	}
}

func TestOnExitSeesTheExit(t *testing.T) {
	got := make(chan error, 1)
	p := NewProcess(Spec{Name: "false", Path: "false", Log: filepath.Join(t.TempDir(), "log"), OnExit: func(err error) { got <- err }})
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background()); err == nil {
		t.Error("Wait on false: nil")
	}
	select {
	case err := <-got:
		if err == nil {
			t.Error("OnExit saw a clean exit of false")
		}
	default:
		t.Error("OnExit was not called before Exited closed")
	}
}
