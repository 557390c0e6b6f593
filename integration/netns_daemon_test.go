package integration

// A jacod process on a host of the multi-host harness (netns_test.go):
// starting it inside the host's namespace and checking the pid is jacod's
// there, the signals the tests send (kill, pause, resume, stop), the exits
// they expect, and its log.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/testcluster"
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

	p *testcluster.Process // nil until the first start
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
	if d.p == nil {
		var wrap []string
		if d.dropNetAdmin {
			// util-linux's setpriv, which execs jacod in turn: root keeps
			// every other capability across the exec, this one it cannot.
			wrap = []string{"setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin", "--"}
		}
		d.p = testcluster.NewProcess(testcluster.Spec{
			Name: "jacod " + d.name, Path: jacodBin, Wrap: wrap, Env: testEnv(),
			Host: d.host.h, Log: d.logPath, Harness: "integration", Ready: testcluster.ServingLine,
		})
	}
	d.p.SetArgs(append([]string{"--data-dir", d.dir, "--listen-addr", d.addr(), "--advertise-addr", d.addr(), "--node-name", d.name}, d.flags...)...)
	d.ended = false
	ctx, cancel := within(startTimeout)
	defer cancel()
	addr, err := d.p.Start(ctx)
	switch {
	case errors.Is(err, testcluster.ErrExited):
		// Its output first, the reason last and on a line of its own: a
		// reason heading the whole log reads as one more log dump.
		t.Logf("jacod %s, start %d, output so far:\n%s", d.name, d.starts, d.lastOutput())
		t.Fatalf("jacod %s exited before serving (start %d): %v", d.name, d.starts, d.p.ExitErr())
	case errors.Is(err, context.DeadlineExceeded):
		t.Logf("jacod %s, start %d, output so far:\n%s", d.name, d.starts, d.lastOutput())
		t.Fatalf("jacod %s did not log %q within %v of start %d", d.name, "jacod serving", startTimeout, d.starts)
	case err != nil:
		t.Fatal(err)
	}
	if addr != d.addr() {
		t.Fatalf("jacod %s listens on %s, asked for %s", d.name, addr, d.addr())
	}
	// The signals the tests send go to this pid: it must be jacod itself
	// (nsenter exec'd it), in the host's namespace.
	if err := d.checkProcess(); err != nil {
		t.Fatal(err)
	}
}

// checkProcess verifies that the pid we hold is jacod, running in the
// host's network namespace, without CAP_NET_ADMIN when started so.
func (d *nsDaemon) checkProcess() error {
	if err := d.p.Verify(); err != nil {
		return err
	}
	if d.dropNetAdmin {
		pid := d.p.Pid()
		has, err := testcluster.HasCapability(pid, unix.CAP_NET_ADMIN)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("jacod %s (pid %d) has CAP_NET_ADMIN, started without it", d.name, pid)
		}
	}
	return nil
}

// running reports whether the process has not exited yet.
func (d *nsDaemon) running() bool { return d.p != nil && d.p.Running() }

// pid is the daemon's process id; 0 when it does not run.
func (d *nsDaemon) pid() int {
	if d.p == nil {
		return 0
	}
	return d.p.Pid()
}

// kill SIGKILLs the daemon, as a crash or power loss would stop it.
func (d *nsDaemon) kill(t testing.TB) {
	t.Helper()
	if !d.running() {
		t.Fatalf("kill: jacod %s is not running", d.name)
	}
	d.ended = true
	if err := d.p.Kill(); err != nil {
		t.Fatal(err)
	}
}

// signalTimeout bounds how long the kernel takes to show a pause or a
// resume acted.
const signalTimeout = 5 * time.Second

// pause SIGSTOPs the daemon: it keeps its sockets, so peers see a member
// that accepts connections and never answers, like a hung machine.
func (d *nsDaemon) pause(t testing.TB) {
	t.Helper()
	if !d.running() {
		t.Fatalf("SIGSTOP: jacod %s is not running", d.name)
	}
	ctx, cancel := within(signalTimeout)
	defer cancel()
	if err := d.p.Pause(ctx); err != nil {
		t.Fatal(err)
	}
}

// resume SIGCONTs a paused daemon.
func (d *nsDaemon) resume(t testing.TB) {
	t.Helper()
	if !d.running() {
		t.Fatalf("SIGCONT: jacod %s is not running", d.name)
	}
	ctx, cancel := within(signalTimeout)
	defer cancel()
	if err := d.p.Resume(ctx); err != nil {
		t.Fatal(err)
	}
}

// stop SIGTERMs the daemon (resuming it first if paused) and requires a
// clean exit in time; after stopTimeout it is SIGKILLed and t fails.
func (d *nsDaemon) stop(t testing.TB) {
	t.Helper()
	if d.p == nil {
		return // never started
	}
	if !d.running() {
		if !d.ended {
			d.ended = true // report it once
			t.Errorf("jacod %s exited by itself (%v) before the test stopped it; its last output:\n%s", d.name, d.p.ExitErr(), d.lastOutput())
		}
		return
	}
	allowed := d.ended // allowExit: the daemon may be exiting with an error
	d.ended = true
	if err := d.p.Stop(stopTimeout); err != nil {
		t.Error(err)
	} else if err := d.p.ExitErr(); err != nil && !allowed {
		t.Errorf("jacod %s exited with %v after SIGTERM, want a clean exit; its last output:\n%s", d.name, err, d.lastOutput())
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
	case <-d.p.Exited():
		return d.p.ExitErr()
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
	if d.p == nil {
		return d.log()
	}
	l, err := d.p.LogSince()
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return l
}
