package integration

// A jacod process on a host of the multi-host harness (netns_test.go):
// starting it inside the host's namespace and checking the pid is jacod's
// there, the signals the tests send (kill, pause, resume, stop), the exits
// they expect, and its log.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/stackdump"
)

// nsDaemon is a jacod running inside a host's namespace, listening on
// 198.18.0.<n>:7000 and advertising it. Like the loopback harness's daemon
// it survives kill and restart with the same data dir and address, so it
// is the same node to its cluster. Methods that can fail the test take the
// *testing.T of the caller, since subtests share daemons.
type nsDaemon struct {
	host  *host
	name  string // --node-name
	dir   string // data dir
	flags []string
	// at, when set, is the address the daemon listens on and advertises
	// instead of its host's first one (moveTo, a manager given a new
	// --advertise-addr).
	at      string
	logPath string
	starts  int

	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
	waitErr error         // cmd.Wait's error, set before exited is closed
	paused  bool
	// ended is set when the test ends the process (kill, stop) or lets
	// it exit (allowExit, expectExit). A daemon that exits otherwise has
	// crashed, and its test fails even if no assertion touched it.
	ended bool
	// dropNetAdmin starts jacod without CAP_NET_ADMIN (bounding and
	// inheritable sets, so no exec regains it): a node that cannot load
	// its nftables ruleset. Set between newJacod and start.
	dropNetAdmin bool
}

// startJacod starts jacod named name on hs with a fresh data dir; it is
// stopped when t ends.
func (hs *host) startJacod(t testing.TB, name string, flags ...string) *nsDaemon {
	t.Helper()
	d := hs.newJacod(t, name, flags...)
	d.start(t)
	return d
}

// newJacod is startJacod without the start, for a test that sets up the
// daemon's process (dropNetAdmin) first.
func (hs *host) newJacod(t testing.TB, name string, flags ...string) *nsDaemon {
	t.Helper()
	d := &nsDaemon{
		host:    hs,
		name:    name,
		dir:     t.TempDir(),
		flags:   flags,
		logPath: filepath.Join(t.TempDir(), "jacod.log"),
	}
	// Last registered runs first: stop the process, then show its log if
	// anything failed; both before the namespaces are deleted.
	t.Cleanup(func() { d.dumpLogOnFailure(t) })
	t.Cleanup(func() { d.cleanup(t) })
	return d
}

// addr is the address the daemon listens on and advertises.
func (d *nsDaemon) addr() string {
	if d.at != "" {
		return d.at
	}
	return d.host.addr()
}

func (d *nsDaemon) start(t testing.TB) {
	t.Helper()
	d.starts++
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== integration: start %d of jacod %s in %s at %s\n", d.starts, d.name, d.host.ns, time.Now().Format(time.RFC3339Nano))
	w := &logWatch{file: logf, addr: make(chan string, 1)}
	// nsenter --net, not `ip netns exec`: the latter also gives jacod a
	// mount namespace of its own, and the network namespaces the containerd
	// runtime bind-mounts for replicas must be visible to containerd and
	// runc in the machine's.
	args := []string{"--net=/var/run/netns/" + d.host.ns}
	if d.dropNetAdmin {
		// util-linux's setpriv, which execs jacod in turn: root keeps
		// every other capability across the exec, this one it cannot.
		args = append(args, "setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin", "--")
	}
	args = append(append(args, jacodBin,
		"--data-dir", d.dir, "--listen-addr", d.addr(), "--advertise-addr", d.addr(), "--node-name", d.name), d.flags...)
	cmd := exec.Command("nsenter", args...)
	cmd.Env = testEnv()
	cmd.Stdout, cmd.Stderr = w, w
	// If this test process dies without its cleanups (a -timeout panic),
	// the kernel kills the daemon rather than leaving it to run forever.
	// nsenter execs jacod, and the setting survives the exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start jacod %s: %v", d.name, err)
	}
	d.cmd, d.exited, d.paused, d.ended = cmd, make(chan struct{}), false, false
	go func(exited chan struct{}) {
		d.waitErr = cmd.Wait()
		logf.Close()
		close(exited)
	}(d.exited)

	select {
	case addr := <-w.addr:
		if addr != d.addr() {
			t.Fatalf("jacod %s listens on %s, asked for %s", d.name, addr, d.addr())
		}
	case <-d.exited:
		// Its output first, the reason last and on a line of its own: a
		// reason heading the whole log reads as one more log dump.
		t.Logf("jacod %s, start %d, output so far:\n%s", d.name, d.starts, d.lastOutput())
		t.Fatalf("jacod %s exited before serving (start %d): %v", d.name, d.starts, d.waitErr)
	case <-time.After(startTimeout):
		t.Logf("jacod %s, start %d, output so far:\n%s", d.name, d.starts, d.lastOutput())
		t.Fatalf("jacod %s did not log %q within %v of start %d", d.name, "jacod serving", startTimeout, d.starts)
	}
	// The signals the tests send go to this pid: it must be jacod itself
	// (nsenter exec'd it), in the host's namespace.
	if err := d.checkProcess(); err != nil {
		t.Fatal(err)
	}
}

// checkProcess verifies that the pid we hold is jacod, running in the
// host's network namespace.
func (d *nsDaemon) checkProcess() error {
	pid := d.cmd.Process.Pid
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return fmt.Errorf("jacod %s: %v", d.name, err)
	}
	want, err := filepath.EvalSymlinks(jacodBin)
	if err != nil {
		return err
	}
	if exe != want {
		return fmt.Errorf("pid %d of jacod %s runs %s, want %s (did `ip netns exec` not exec?)", pid, d.name, exe, want)
	}
	var got, ns syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &got); err != nil {
		return err
	}
	if err := syscall.Stat("/var/run/netns/"+d.host.ns, &ns); err != nil {
		return err
	}
	if got.Ino != ns.Ino || got.Dev != ns.Dev {
		return fmt.Errorf("jacod %s (pid %d) is not in network namespace %s", d.name, pid, d.host.ns)
	}
	if d.dropNetAdmin {
		has, err := hasCapability(pid, unix.CAP_NET_ADMIN)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("jacod %s (pid %d) has CAP_NET_ADMIN, started without it", d.name, pid)
		}
	}
	return nil
}

// hasCapability reports whether capability bit c is in pid's effective set.
func hasCapability(pid, c int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			set, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("CapEff of pid %d: %w", pid, err)
			}
			return set&(1<<c) != 0, nil
		}
	}
	return false, fmt.Errorf("/proc/%d/status has no CapEff line", pid)
}

// running reports whether the process has not exited yet.
func (d *nsDaemon) running() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the daemon, as a crash or power loss would stop it.
func (d *nsDaemon) kill(t testing.TB) {
	t.Helper()
	if !d.running() {
		t.Fatalf("kill: jacod %s is not running", d.name)
	}
	d.ended = true
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
	d.paused = false
}

// pause SIGSTOPs the daemon: it keeps its sockets, so peers see a member
// that accepts connections and never answers, like a hung machine.
func (d *nsDaemon) pause(t testing.TB) {
	t.Helper()
	d.signalAndWait(t, syscall.SIGSTOP, func(state byte) bool { return state == 'T' })
	d.paused = true
}

// resume SIGCONTs a paused daemon.
func (d *nsDaemon) resume(t testing.TB) {
	t.Helper()
	d.signalAndWait(t, syscall.SIGCONT, func(state byte) bool { return state != 'T' })
	d.paused = false
}

// signalAndWait sends sig and waits until the kernel shows the process in a
// state ok accepts, so the test goes on only once the signal has acted.
func (d *nsDaemon) signalAndWait(t testing.TB, sig syscall.Signal, ok func(state byte) bool) {
	t.Helper()
	if !d.running() {
		t.Fatalf("%v: jacod %s is not running", sig, d.name)
	}
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v jacod %s: %v", sig, d.name, err)
	}
	eventually(t, 5*time.Second, func() error {
		state, err := procState(d.cmd.Process.Pid)
		if err != nil {
			return err
		}
		if !ok(state) {
			return fmt.Errorf("jacod %s is in state %c after %v", d.name, state, sig)
		}
		return nil
	})
}

// procState returns the state letter of /proc/pid/stat (R, S, T, ...).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// "pid (comm) S ...": comm may hold spaces, so look after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}

// stop SIGTERMs the daemon (resuming it first if paused) and requires a
// clean exit in time; after stopTimeout it is SIGKILLed and t fails.
func (d *nsDaemon) stop(t testing.TB) {
	t.Helper()
	if !d.running() {
		if !d.ended {
			d.ended = true // report it once
			t.Errorf("jacod %s exited by itself (%v) before the test stopped it; its last output:\n%s", d.name, d.waitErr, d.lastOutput())
		}
		return
	}
	allowed := d.ended // allowExit: the daemon may be exiting with an error
	d.ended = true
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if d.paused {
		// A stopped process keeps SIGTERM pending until it runs again.
		_ = d.cmd.Process.Signal(syscall.SIGCONT)
		d.paused = false
	}
	select {
	case <-d.exited:
		if d.waitErr != nil && !allowed {
			t.Errorf("jacod %s exited with %v after SIGTERM, want a clean exit; its last output:\n%s", d.name, d.waitErr, d.lastOutput())
		}
	case <-time.After(stopTimeout):
		stackdump.QuitThenKill(d.cmd.Process, d.exited)
		t.Errorf("jacod %s did not stop within %v of SIGTERM; killed; the stacks it waited in:\n%s", d.name, stopTimeout, stackdump.Condense(d.log()))
	}
}

// allowExit tells the harness that the daemon may exit by itself from now
// on, cleanly or not, without that counting as a crash.
func (d *nsDaemon) allowExit() { d.ended = true }

// expectExit waits up to timeout for the daemon to exit by itself, as the
// test expects, and returns how it exited.
func (d *nsDaemon) expectExit(t testing.TB, timeout time.Duration) error {
	t.Helper()
	d.ended = true
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-d.exited:
		return d.waitErr
	case <-timer.C:
		t.Fatalf("jacod %s still runs %v later; want it to exit", d.name, timeout)
		return nil
	}
}

// restart starts a killed or stopped daemon again on its data dir and
// address.
func (d *nsDaemon) restart(t testing.TB) {
	t.Helper()
	d.stop(t)
	d.start(t)
}

func (d *nsDaemon) cleanup(t testing.TB) {
	d.stop(t)
	// Replicas outlive jacod: the network namespaces of those still
	// running (containers, hook bundles on networks) are bind mounts under
	// the data dir, which t's TempDir cleanup removes next.
	if err := containerdtest.UnmountUnder(d.dir); err != nil {
		t.Errorf("unmount under %s's data dir: %v", d.name, err)
	}
	if strings.Contains(d.log(), raceReport) {
		t.Errorf("jacod %s reported a data race", d.name)
	}
}

func (d *nsDaemon) log() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// logTailLines bounds what a failed test prints of each daemon's log: a
// seven-manager test would otherwise print tens of thousands of lines.
// startTailLines bounds the output quoted with a start or stop failure.
const (
	logTailLines   = 150
	startTailLines = 40
)

// tailLines returns the last n lines of s, saying how many it left out.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(... %d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// lastOutput is the end of what the daemon logged since its latest
// start, quoted with a start or stop failure.
func (d *nsDaemon) lastOutput() string { return tailLines(d.logSince(), startTailLines) }

// dumpLogOnFailure prints the tail of the daemon's log when t has failed.
// The dump is framed so that a failure reported between two dumps (by a
// later cleanup) stands out; the whole log is also written under
// $JACO_TEST_ARTIFACTS when set, which CI keeps.
func (d *nsDaemon) dumpLogOnFailure(t testing.TB) {
	if !t.Failed() {
		return
	}
	log := d.log()
	saved := ""
	if dir := os.Getenv(artifactsEnv); dir != "" {
		dir = filepath.Join(dir, "daemon-logs", strings.ReplaceAll(t.Name(), "/", "_"))
		path := filepath.Join(dir, d.name+".log")
		if err := os.MkdirAll(dir, 0o755); err == nil && os.WriteFile(path, []byte(log), 0o644) == nil {
			saved = ", whole log in " + path
		}
	}
	t.Logf("----- begin jacod %s log (%s, %s, data dir %s%s); the test's failure is reported above, not in here -----\n%s\n----- end jacod %s log -----",
		d.name, d.host.ns, d.addr(), d.dir, saved, tailLines(log, logTailLines), d.name)
}

// logSince returns what the daemon logged since its latest start.
func (d *nsDaemon) logSince() string {
	l := d.log()
	if i := strings.LastIndex(l, "=== integration: start "); i >= 0 {
		return l[i:]
	}
	return l
}
