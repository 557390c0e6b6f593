package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/internal/stackdump"
)

// Spec says how a Process runs.
type Spec struct {
	// Name is what errors and the log's markers call the process
	// ("jacod m1").
	Name string
	// Path is the program; Args its arguments, without the program name.
	Path string
	Args []string
	// Wrap is a command that execs Path with Args in turn (util-linux's
	// setpriv dropping a capability, say), inside the host's namespace.
	// Verify requires the pid to run Path all the same.
	Wrap []string
	// Env is the environment; nil means this process's. Environ is this
	// process's without the variables that change what jaco does.
	Env []string
	// Host is the namespace the process runs in; nil means the caller's.
	Host *Host
	// Log is the file stdout and stderr are appended to, across starts.
	Log string
	// Harness names the caller in the log's markers ("integration"), so
	// a reader of the log tells the harness's lines from the program's.
	Harness string
	// Ready, when set, is the line Start waits for before it returns
	// (ServingLine for jacod).
	Ready *regexp.Regexp
	// OwnGroup puts the process in a process group of its own, so a
	// Ctrl-C in the terminal reaches only the caller, which then stops
	// it in order.
	OwnGroup bool
	// OnExit, when set, is called with what waiting for the process
	// returned each time it exits, before Exited's channel is closed: a
	// caller records there whether it caused the exit or the process
	// crashed.
	OnExit func(error)
}

// Process is one program a harness runs, started and stopped as often as
// the caller likes on the same Spec (a daemon killed and restarted on its
// data dir is the same node to its cluster). Its methods may be called
// from any goroutine.
type Process struct {
	mu      sync.Mutex
	spec    Spec
	starts  int
	cmd     *exec.Cmd     // nil until the latest start's process runs
	exited  chan struct{} // closed once the latest start's process is reaped
	waitErr error         // what waiting for it returned, set before exited closes
	paused  bool
}

// NewProcess returns a process that runs as spec says once started.
func NewProcess(spec Spec) *Process {
	if spec.Harness == "" {
		spec.Harness = "testcluster"
	}
	return &Process{spec: spec}
}

// Name is Spec.Name.
func (p *Process) Name() string { return p.spec.Name }

// LogPath is Spec.Log.
func (p *Process) LogPath() string { return p.spec.Log }

// SetArgs replaces the arguments of the next start (a daemon restarted
// with other flags or on a new address); a running process keeps its own.
func (p *Process) SetArgs(args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spec.Args = args
}

// Start starts the process. When Spec.Ready is set it returns only once a
// line of the output since this start matches, with that match's first
// non-empty group (the whole match if it has none): the address jacod
// serves on, for ServingLine. If the process exits first the error wraps
// ErrExited; if ctx ends first the process is left running for the caller
// to stop or kill.
//
// The process gets SIGKILL when the caller dies, so nothing outlives a
// test binary killed by its timeout. The kernel sends that signal when the
// thread that forked the child ends, not the process, and the Go runtime
// ends threads a goroutine left locked (containerd's netns.NewNetNS does,
// as does a test entering a namespace): each start therefore forks from a
// thread of its own, kept until the process has been reaped.
func (p *Process) Start(ctx context.Context) (string, error) {
	p.mu.Lock()
	if p.runningLocked() {
		p.mu.Unlock()
		return "", fmt.Errorf("start %s: already running", p.spec.Name)
	}
	p.starts++
	spec, n := p.spec, p.starts
	exited := make(chan struct{})
	p.cmd, p.exited, p.waitErr, p.paused = nil, exited, nil, false
	p.mu.Unlock()

	argv := append(append(slices.Clone(spec.Wrap), spec.Path), spec.Args...)
	where := ""
	if spec.Host != nil {
		// nsenter --net, not `ip netns exec`: the latter also gives the
		// process a mount namespace of its own, and the network namespaces
		// jacod's containerd runtime bind-mounts for replicas must be
		// visible to containerd and runc in the machine's. nsenter execs
		// the program, so the pid signals go to is the program's.
		argv = append([]string{"nsenter", "--net=" + spec.Host.Path()}, argv...)
		where = " in " + spec.Host.name
	}
	logf, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		err = fmt.Errorf("open the log of %s: %w", spec.Name, err)
		p.failStart(exited, err)
		return "", err
	}
	fmt.Fprintf(logf, "%s%d of %s%s at %s: %s\n", startMarker(spec.Harness), n, spec.Name, where,
		time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = spec.Env
	var out io.Writer = logf
	var watch *lineWatch
	if spec.Ready != nil {
		watch = newLineWatch(logf, spec.Ready)
		out = watch
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: spec.OwnGroup}

	started := make(chan error, 1)
	go p.own(spec, cmd, logf, exited, started)
	if err := <-started; err != nil {
		return "", fmt.Errorf("start %s: %w", spec.Name, err)
	}
	if watch == nil {
		return "", nil
	}
	select {
	case m := <-watch.found:
		return m, nil
	case <-exited:
		// The output is copied before the process counts as reaped: a
		// ready line it printed just before exiting is there.
		select {
		case m := <-watch.found:
			return m, nil
		default:
		}
		return "", fmt.Errorf("%s %w before it was ready: %v", spec.Name, ErrExited, p.ExitErr())
	case <-ctx.Done():
		return "", fmt.Errorf("%s did not log that it is ready: %w", spec.Name, ctx.Err())
	}
}

// ErrExited is wrapped by Start's error when the process exited before it
// was ready.
var ErrExited = errors.New("exited")

// own starts cmd on a locked thread and reaps it there (see Start for
// why), then reports the exit. It is the one goroutine of each start.
func (p *Process) own(spec Spec, cmd *exec.Cmd, logf *os.File, exited chan struct{}, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		logf.Close()
		p.failStart(exited, err)
		started <- err
		return
	}
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
	track(p, true)
	started <- nil

	err := cmd.Wait()
	how := ""
	if err != nil {
		how = ": " + err.Error()
	}
	fmt.Fprintf(logf, "=== %s: %s exited at %s%s\n", spec.Harness, spec.Name, time.Now().Format(time.RFC3339Nano), how)
	logf.Close()
	track(p, false)
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	if spec.OnExit != nil {
		spec.OnExit(err)
	}
	close(exited)
}

// failStart records a start that produced no process as an exit.
func (p *Process) failStart(exited chan struct{}, err error) {
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	close(exited)
}

// runningLocked reports whether the latest start's process has not been
// reaped yet (paused counts as running).
func (p *Process) runningLocked() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Running reports whether the process has been started and not reaped.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

// Exited is closed once the latest start's process has been reaped (nil
// before the first start).
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// ExitErr is what waiting for the latest start's process returned: nil
// for a clean exit (or one still running), an *exec.ExitError otherwise.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Wait waits for the process to exit by itself and returns ExitErr, or
// ctx's error if ctx ends first.
func (p *Process) Wait(ctx context.Context) error {
	exited := p.Exited()
	if exited == nil {
		return fmt.Errorf("wait for %s: never started", p.spec.Name)
	}
	select {
	case <-exited:
		return p.ExitErr()
	case <-ctx.Done():
		return fmt.Errorf("%s still runs: %w", p.spec.Name, ctx.Err())
	}
}

// Pid is the running process's id; 0 when it is not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// current returns the running process, or an error naming what could
// not be done to it.
func (p *Process) current(what string) (*exec.Cmd, chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !p.runningLocked() {
		return nil, nil, fmt.Errorf("%s: %s is not running", what, p.spec.Name)
	}
	return p.cmd, p.exited, nil
}

// Signal sends sig to the process and returns at once. SIGSTOP and
// SIGCONT are remembered, so Stop knows to resume a paused process.
func (p *Process) Signal(sig syscall.Signal) error {
	cmd, _, err := p.current(sig.String())
	if err != nil {
		return err
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to %s: %w", sig, p.spec.Name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.setPaused(true)
	case syscall.SIGCONT:
		p.setPaused(false)
	}
	return nil
}

func (p *Process) setPaused(v bool) {
	p.mu.Lock()
	p.paused = v
	p.mu.Unlock()
}

// Kill SIGKILLs the process, as a crash or power loss would stop it, and
// returns once it has been reaped.
func (p *Process) Kill() error {
	cmd, exited, err := p.current("kill")
	if err != nil {
		return err
	}
	_ = cmd.Process.Kill()
	<-exited
	p.setPaused(false)
	return nil
}

// Pause SIGSTOPs the process and returns once the kernel shows it
// stopped. It keeps its sockets, so peers see a member that accepts
// connections and never answers, like a hung machine.
func (p *Process) Pause(ctx context.Context) error {
	return p.signalAndWait(ctx, syscall.SIGSTOP, func(state byte) bool { return state == 'T' })
}

// Resume SIGCONTs a paused process and returns once it runs again.
func (p *Process) Resume(ctx context.Context) error {
	return p.signalAndWait(ctx, syscall.SIGCONT, func(state byte) bool { return state != 'T' })
}

// signalAndWait sends sig and waits until the kernel shows the process in
// a state ok accepts, so the caller goes on only once the signal acted.
func (p *Process) signalAndWait(ctx context.Context, sig syscall.Signal, ok func(state byte) bool) error {
	pid := p.Pid()
	if err := p.Signal(sig); err != nil {
		return err
	}
	tick := time.NewTicker(statePoll)
	defer tick.Stop()
	for {
		state, err := procState(pid)
		if err == nil && ok(state) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%s is in state %c after %v", p.spec.Name, state, sig)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// statePoll is how often signalAndWait looks at the process's state.
const statePoll = 20 * time.Millisecond

// Stop SIGTERMs the process (resuming it first if paused) and returns
// once it has been reaped; ExitErr then says how it exited. A process
// still there after timeout is ended with SIGQUIT, which makes a Go
// program write its goroutines' stacks, then SIGKILL, and the error holds
// the stacks it waited in (internal/stackdump). Stopping a process that
// does not run does nothing.
func (p *Process) Stop(timeout time.Duration) error {
	p.mu.Lock()
	cmd, exited, paused := p.cmd, p.exited, p.paused
	running := cmd != nil && p.runningLocked()
	p.paused = false
	p.mu.Unlock()
	if !running {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if paused {
		// A stopped process keeps SIGTERM pending until it runs again.
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
		return nil
	case <-timer.C:
		stackdump.QuitThenKill(cmd.Process, exited)
		log, _ := p.LogSince()
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed; the stacks it waited in:\n%s", p.spec.Name, timeout, stackdump.Condense(log))
	}
}

// Environ is this process's environment without the JACO_* variables: a
// JACO_TOKEN or JACO_DATA_DIR in the shell that runs a harness must not
// change what the programs under test do.
func Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JACO_") {
			env = append(env, kv)
		}
	}
	return env
}

// live holds every process running, so that an interrupted program still
// ends them all (KillAll).
var live struct {
	sync.Mutex
	procs map[*Process]bool
}

func track(p *Process, running bool) {
	live.Lock()
	defer live.Unlock()
	if !running {
		delete(live.procs, p)
		return
	}
	if live.procs == nil {
		live.procs = make(map[*Process]bool)
	}
	live.procs[p] = true
}

// KillAll kills every process of this package still running and returns
// once all are reaped: a program's last line of defence when it is
// interrupted (its children would die with it anyway, Pdeathsig, but
// unreaped and mid-write).
func KillAll() {
	live.Lock()
	ps := make([]*Process, 0, len(live.procs))
	for p := range live.procs {
		ps = append(ps, p)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { _ = p.Kill() })
	}
	wg.Wait()
}
