package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/stackdump"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// Bounds of one daemon's start and stop, for a loaded two-core machine.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
)

// member is one jacod manager on a host. It survives kill and restart with
// the same data dir and address, so it stays the same raft member.
type member struct {
	name    string
	host    *host
	dir     string
	logPath string
	jacod   string
	flags   []string
	// disk is the mount point of the member's own small filesystem, when
	// it has one (the data dir is inside it); "" otherwise.
	disk string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	paused  bool
	// crashed is set when the process exited without the runner ending
	// it: a daemon that dies by itself fails the run.
	crashed error
	ending  bool
}

func (m *member) addr() string   { return m.host.ip + ":7000" }
func (m *member) socket() string { return datadir.Dir(m.dir).Socket() }

// start runs jacod inside the host's namespace and waits until it logs
// that it serves. From then on, an exit the runner did not cause is a
// crash.
func (m *member) start(ctx context.Context) error { return m.run(ctx, false) }

// startMayExit is start for a daemon that may exit by itself, at once or
// later, without that counting as a crash (until expectUp).
func (m *member) startMayExit(ctx context.Context) error { return m.run(ctx, true) }

func (m *member) run(ctx context.Context, mayExit bool) error {
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", m.name, err)
	}
	fmt.Fprintf(logf, "%s%s at %s\n", startMarker, m.name, time.Now().Format(time.RFC3339Nano))
	w := &servingWatch{file: logf, serving: make(chan struct{})}
	// nsenter execs jacod, so the pid signals go to is jacod's.
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+m.host.ns, m.jacod,
		"--data-dir", m.dir, "--listen-addr", m.addr(), "--advertise-addr", m.addr(), "--node-name", m.name)
	cmd.Args = append(cmd.Args, m.flags...)
	cmd.Env = daemonEnv()
	cmd.Stdout, cmd.Stderr = w, w
	// If the runner dies without cleaning up, the kernel kills the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start jacod %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.exited, m.paused, m.ending = cmd, exited, false, mayExit
	m.mu.Unlock()
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== chaos: jacod %s exited at %s: %v\n", m.name, time.Now().Format(time.RFC3339Nano), err)
		logf.Close()
		m.mu.Lock()
		m.waitErr = err
		if !m.ending && m.crashed == nil {
			m.crashed = fmt.Errorf("jacod %s exited by itself: %v (log %s)", m.name, err, m.logPath)
		}
		m.mu.Unlock()
		close(exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-w.serving:
		return nil
	case <-exited:
		return fmt.Errorf("jacod %s exited before serving: %v (log %s)", m.name, m.waitErr, m.logPath)
	case <-timer.C:
		return fmt.Errorf("jacod %s did not serve within %s (log %s)", m.name, startTimeout, m.logPath)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startMarker begins each start's part of a member's log.
const startMarker = "=== chaos: start jacod "

// daemonEnv is the runner's environment without JACO_* variables, which
// would change what the daemon does.
func daemonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JACO_") {
			env = append(env, kv)
		}
	}
	return env
}

// running reports whether the process is alive (paused counts).
func (m *member) running() bool {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// allowExit tells the runner the daemon may exit by itself until its next
// start without that counting as a crash.
func (m *member) allowExit() {
	m.mu.Lock()
	m.ending = true
	m.mu.Unlock()
}

// expectUp undoes allowExit: from now on an exit is a crash again.
func (m *member) expectUp() {
	m.mu.Lock()
	m.ending = false
	m.mu.Unlock()
}

// kill SIGKILLs the daemon, as a power loss would stop it.
func (m *member) kill() error {
	if !m.running() {
		return fmt.Errorf("kill: jacod %s is not running", m.name)
	}
	m.mu.Lock()
	m.ending = true
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	m.mu.Lock()
	m.paused = false
	m.mu.Unlock()
	return nil
}

// pause SIGSTOPs the daemon: it keeps its sockets, so peers and clients
// see a member that accepts connections and never answers.
func (m *member) pause(ctx context.Context) error {
	if err := m.signal(ctx, syscall.SIGSTOP, func(s byte) bool { return s == 'T' }); err != nil {
		return err
	}
	m.mu.Lock()
	m.paused = true
	m.mu.Unlock()
	return nil
}

// resume SIGCONTs a paused daemon.
func (m *member) resume(ctx context.Context) error {
	if err := m.signal(ctx, syscall.SIGCONT, func(s byte) bool { return s != 'T' }); err != nil {
		return err
	}
	m.mu.Lock()
	m.paused = false
	m.mu.Unlock()
	return nil
}

// signal sends sig and waits until the kernel shows the process in a state
// ok accepts, so the schedule goes on only once the signal acted.
func (m *member) signal(ctx context.Context, sig syscall.Signal, ok func(byte) bool) error {
	if !m.running() {
		return fmt.Errorf("%v: jacod %s is not running", sig, m.name)
	}
	m.mu.Lock()
	pid := m.cmd.Process.Pid
	err := m.cmd.Process.Signal(sig)
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%v jacod %s: %w", sig, m.name, err)
	}
	return waitfor.Until(ctx, 5*time.Second, waitPoll, func(context.Context) error {
		state, err := procState(pid)
		if err != nil {
			return err
		}
		if !ok(state) {
			return fmt.Errorf("jacod %s is in state %c after %v", m.name, state, sig)
		}
		return nil
	})
}

// procState returns the state letter of /proc/pid/stat.
func procState(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// "pid (comm) S ...": comm may hold spaces, so look after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}

// stop SIGTERMs the daemon (resuming it if paused) and SIGKILLs it after
// stopTimeout. It reports a daemon that crashed during the run.
func (m *member) stop() error {
	m.mu.Lock()
	crashed := m.crashed
	m.mu.Unlock()
	if !m.running() {
		return crashed
	}
	m.mu.Lock()
	m.ending = true
	cmd, exited, paused := m.cmd, m.exited, m.paused
	m.paused = false
	m.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if paused {
		// A stopped process keeps SIGTERM pending until it runs again.
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
		return crashed
	case <-time.After(stopTimeout):
		stackdump.QuitThenKill(cmd.Process, exited)
		return errors.Join(crashed, fmt.Errorf("jacod %s did not stop within %s of SIGTERM; killed; the stacks it waited in:\n%s", m.name, stopTimeout, stackdump.Condense(m.logSince())))
	}
}

// crash returns why the daemon died by itself, or nil.
func (m *member) crash() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// servingWatch copies the daemon's output to its log and closes serving at
// jacod's "ready to serve" line.
type servingWatch struct {
	file    *os.File
	serving chan struct{}
	once    sync.Once
	partial []byte
}

func (w *servingWatch) Write(p []byte) (int, error) {
	if _, err := w.file.Write(p); err != nil {
		return 0, err
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		if bytes.Contains(w.partial[:i], []byte(`msg="jacod serving"`)) {
			w.once.Do(func() { close(w.serving) })
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

// logSince returns what the daemon logged since its latest start.
func (m *member) logSince() string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return ""
	}
	l := string(b)
	if i := strings.LastIndex(l, startMarker); i >= 0 {
		return l[i:]
	}
	return l
}
