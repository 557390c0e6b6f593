package hooks

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	agentexec "github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// shimStageEnv marks the detached second stage of the shim.
const shimStageEnv = "JACO_HOOK_SHIM_STAGE"

// readyFD is the pipe on which the shim tells the runtime that launch
// started ("ok") or why it did not.
const readyFD = 3

// ShimMain runs the shim for the replica directory in args[0] and returns
// the process exit code. jacod calls it for "jacod hook-shim DIR"; tests
// call it from TestMain.
//
// The first stage starts a copy of itself in a new session and exits, so
// the runtime that started it need not reap it and it outlives jacod. The
// second stage runs launch (and finish when due), forwards stop signals
// to the running hook's process group and records how launch ended. A
// hook with resource limits is started through a third, the exec helper
// (see execStage).
func ShimMain(args []string) int {
	if os.Getenv(shimStageEnv) == execStage {
		return runExecStage()
	}
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "jaco hook-shim: usage: %s DIR\n", ShimCommand)
		return 2
	}
	if os.Getenv(shimStageEnv) != "2" {
		return shimDetach(args[0])
	}
	return shimRun(args[0])
}

// shimDetach is the first stage: start the second in its own session
// and in the replica's sandbox (its network namespace, when it is on
// networks: see sandbox.start), handing on the ready pipe, stdout and
// stderr.
func shimDetach(dir string) int {
	var spec launchSpec
	if err := readJSON(filepath.Join(dir, launchFile), &spec); err != nil {
		return detachFailed(fmt.Errorf("read launch spec: %w", err))
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), shimStageEnv+"=2")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(readyFD, "ready")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := spec.Sandbox.start(cmd); err != nil {
		return detachFailed(err)
	}
	return 0
}

// detachFailed tells the runtime, on the ready pipe, why the second stage
// did not start.
func detachFailed(err error) int {
	fmt.Fprintf(os.Stderr, "jaco hook-shim: detach: %v\n", err)
	fmt.Fprintf(os.NewFile(readyFD, "ready"), "error: %v\n", err)
	return 1
}

// shimRun is the second stage.
func shimRun(dir string) int {
	syscall.CloseOnExec(readyFD) // launch must not hold the ready pipe open
	ready := os.NewFile(readyFD, "ready")
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "jaco hook-shim: %v\n", err)
		fmt.Fprintf(ready, "error: %v\n", err)
		ready.Close()
		return 1
	}
	var spec launchSpec
	if err := readJSON(filepath.Join(dir, launchFile), &spec); err != nil {
		return fail(fmt.Errorf("read launch spec: %w", err))
	}
	self, err := recordOf(os.Getpid())
	if err != nil {
		return fail(fmt.Errorf("describe shim: %w", err))
	}
	if err := writeJSON(filepath.Join(dir, shimFile), self); err != nil {
		return fail(err)
	}

	fwd := &forwarder{stop: spec.StopSignal}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM)
	var wg sync.WaitGroup
	wg.Go(func() { fwd.run(sigs) })
	defer func() {
		signal.Stop(sigs)
		close(sigs)
		wg.Wait()
	}()

	launch := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	started := func(pid int) error {
		rec, err := recordOf(pid)
		if err != nil {
			return fmt.Errorf("describe launch: %w", err)
		}
		if err := writeJSON(filepath.Join(dir, childFile), rec); err != nil {
			return err
		}
		fmt.Fprintln(ready, "ok")
		ready.Close()
		return nil
	}
	state, err := fwd.runChild(launch, spec, started)
	if err != nil {
		// Nothing runs: forget the shim so that Start can be tried again.
		os.Remove(filepath.Join(dir, shimFile))
		return fail(err)
	}
	code, sig := exitStatus(state)
	rec := exitRecord{Code: code, Signal: sig, At: time.Now().UTC()}
	rec.StopAsked, _ = fwd.asked()
	fmt.Fprintf(os.Stderr, "jaco hook-shim: launch exited with code %d%s (stop asked: %v)\n", code, withSignal(sig), rec.StopAsked)

	if !rec.StopAsked || code == 1 {
		rec.FinishRan, rec.FinishError = runFinish(fwd, spec)
	}
	if err := writeJSON(filepath.Join(dir, exitFile), rec); err != nil {
		fmt.Fprintf(os.Stderr, "jaco hook-shim: %v\n", err)
		return 1
	}
	return 0
}

// runFinish runs the bundle's finish, if any and unless a kill was asked.
func runFinish(fwd *forwarder, spec launchSpec) (ran bool, errText string) {
	path := filepath.Join(cmp.Or(spec.Bundle, spec.Dir), api.HookFinish)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, ""
	}
	if _, killed := fwd.asked(); killed {
		return false, "not run: replica was killed"
	}
	state, err := fwd.runChild(exec.Command(path), spec, nil)
	if err != nil {
		return false, err.Error()
	}
	if code, sig := exitStatus(state); code != 0 {
		errText = fmt.Sprintf("finish exited with code %d%s", code, withSignal(sig))
		fmt.Fprintf(os.Stderr, "jaco hook-shim: %s\n", errText)
	}
	return true, errText
}

// forwarder passes stop signals on to the process group of the hook the
// shim runs at the moment. SIGINT, the ladder's first rung, is passed on
// as the spec's stop signal (stop): the runtime cannot send that signal
// to the shim itself, as SIGTERM means "kill" here and most others would
// end the shim. SIGTERM, which only the runtime sends, means "kill": the
// shim cannot forward a SIGKILL it never receives. SIGQUIT passes as it
// is.
type forwarder struct {
	stop      syscall.Signal
	mu        sync.Mutex
	pgid      int
	stopAsked bool
	killAsked bool
}

func (f *forwarder) run(sigs <-chan os.Signal) {
	for s := range sigs {
		sig := s.(syscall.Signal)
		f.mu.Lock()
		f.stopAsked = true
		switch {
		case sig == syscall.SIGTERM:
			f.killAsked, sig = true, syscall.SIGKILL
		case sig == syscall.SIGINT && f.stop != 0:
			sig = f.stop
		}
		if f.pgid > 0 {
			if err := syscall.Kill(-f.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				fmt.Fprintf(os.Stderr, "jaco hook-shim: forward %s: %v\n", agentexec.SignalName(sig), err)
			}
		}
		f.mu.Unlock()
	}
}

func (f *forwarder) asked() (stop, kill bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopAsked, f.killAsked
}

// runChild runs cmd in its own process group as the current target of
// forwarded signals and returns how it ended. started, if set, is called
// once it runs; an error from it kills the child.
func (f *forwarder) runChild(cmd *exec.Cmd, spec launchSpec, started func(pid int) error) (*os.ProcessState, error) {
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	path := cmd.Path
	f.mu.Lock()
	// Held through an exec helper's start too: a stop asked meanwhile
	// waits for the group to exist.
	if err := spec.Proc.start(cmd, selfHelper(), (*exec.Cmd).Start); err != nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	f.pgid = cmd.Process.Pid
	f.mu.Unlock()
	if started != nil {
		if err := started(cmd.Process.Pid); err != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			f.clear()
			return nil, err
		}
	}
	err := cmd.Wait()
	f.clear()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("wait %s: %w", path, err)
	}
	return cmd.ProcessState, nil
}

func (f *forwarder) clear() {
	f.mu.Lock()
	f.pgid = 0
	f.mu.Unlock()
}

func withSignal(sig string) string {
	if sig == "" {
		return ""
	}
	return " (" + sig + ")"
}
