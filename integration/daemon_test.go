package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec/hooks"
	"github.com/jaco-project/jaco/internal/testcluster"
)

// Deadlines of a daemon's lifecycle. Generous because -race binaries on a
// busy machine are slow; a healthy daemon takes a fraction of them.
const (
	startTimeout = 20 * time.Second
	stopTimeout  = 15 * time.Second
)

// daemon is one jacod process on its own data dir, stopped by the test's
// cleanup. It survives kill and restart: the data dir and the TCP address
// stay, so a restarted daemon is the same node to its cluster.
type daemon struct {
	t    testing.TB
	dir  string // data dir
	name string // --node-name
	// addr is the TCP address. The first start listens on port 0 and
	// learns the port from the log; restarts ask for the same one, since
	// the cluster recorded it as this node's address.
	addr    string
	flags   []string // more jacod flags, for every start
	logPath string
	p       *testcluster.Process
}

// startDaemon starts jacod named name on a fresh data dir, with flags
// added to the ones the harness sets.
func startDaemon(t testing.TB, name string, flags ...string) *daemon {
	t.Helper()
	return startDaemonAt(t, name, t.TempDir(), "127.0.0.1:0", flags...)
}

// startDaemonAt is startDaemon on data dir dir (one a restore wrote, say)
// listening on addr.
func startDaemonAt(t testing.TB, name, dir, addr string, flags ...string) *daemon {
	t.Helper()
	d := &daemon{
		t:       t,
		dir:     dir,
		name:    name,
		addr:    addr,
		flags:   flags,
		logPath: filepath.Join(t.TempDir(), "jacod.log"),
	}
	// The harness's process (internal/testcluster): output to the log,
	// dead with this test process, started until it logs that it serves,
	// which names the bound TCP address.
	d.p = testcluster.NewProcess(testcluster.Spec{
		Name: "jacod " + name, Path: jacodBin, Env: testEnv(),
		Log: d.logPath, Harness: "integration", Ready: testcluster.ServingLine,
	})
	// Cleanups run last registered first: stop the process, then show its
	// log if anything failed (including the stop itself).
	t.Cleanup(d.dumpLogOnFailure)
	t.Cleanup(d.cleanup)
	d.start()
	return d
}

func (d *daemon) start() {
	t := d.t
	t.Helper()
	d.p.SetArgs(append([]string{"--data-dir", d.dir, "--listen-addr", d.addr, "--node-name", d.name}, d.flags...)...)
	ctx, cancel := within(startTimeout)
	defer cancel()
	addr, err := d.p.Start(ctx)
	switch {
	case errors.Is(err, testcluster.ErrExited):
		t.Fatalf("jacod exited before serving: %v", d.p.ExitErr())
	case errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("jacod did not log %q within %v", "jacod serving", startTimeout)
	case err != nil:
		t.Fatal(err)
	}
	if d.addr != "127.0.0.1:0" && addr != d.addr {
		t.Fatalf("restarted jacod listens on %s, asked for %s", addr, d.addr)
	}
	d.addr = addr
}

// running reports whether the process has not exited yet.
func (d *daemon) running() bool { return d.p.Running() }

// pid is the daemon's process id; 0 when it does not run.
func (d *daemon) pid() int { return d.p.Pid() }

// kill SIGKILLs the daemon, as a crash or power loss would stop it.
func (d *daemon) kill() {
	d.t.Helper()
	if err := d.p.Kill(); err != nil {
		d.t.Fatal(err)
	}
}

// stop SIGTERMs the daemon and requires it to exit cleanly in time; after
// stopTimeout it is SIGKILLed and the test fails.
func (d *daemon) stop() {
	t := d.t
	t.Helper()
	if !d.running() {
		return
	}
	if err := d.p.Stop(stopTimeout); err != nil {
		t.Error(err)
	} else if err := d.p.ExitErr(); err != nil {
		t.Errorf("jacod %s exited with %v after SIGTERM, want a clean exit", d.name, err)
	}
}

// restart stops the daemon if it runs and starts it again on the same data
// dir and address.
func (d *daemon) restart() {
	d.t.Helper()
	d.stop()
	d.start()
}

func (d *daemon) cleanup() {
	d.stop()
	// Replicas of hook bundles outlive their jacod, as they must across a
	// restart; the test's end is theirs too.
	if n := hooks.StopShimsUnder(d.dir, 5*time.Second); n > 0 {
		d.t.Logf("jacod %s: stopped %d hook shims it left running", d.name, n)
	}
	// The report itself is in the log, which dumpLogOnFailure prints.
	if strings.Contains(d.log(), raceReport) {
		d.t.Errorf("jacod %s reported a data race", d.name)
	}
}

func (d *daemon) log() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

func (d *daemon) dumpLogOnFailure() {
	if d.t.Failed() {
		d.t.Logf("jacod %s (data dir %s) log:\n%s", d.name, d.dir, d.log())
	}
}

// jaco runs the CLI against this daemon's local socket.
func (d *daemon) jaco(args ...string) result {
	return jaco(nil, append([]string{"--data-dir", d.dir}, args...)...)
}

// jacoTCP runs the CLI against this daemon's TCP address with token.
func (d *daemon) jacoTCP(token string, args ...string) result {
	return jaco([]string{"JACO_TOKEN=" + token}, append([]string{"--server", d.addr}, args...)...)
}

// socket is the daemon's trusted local socket, where docs/design.md §12 puts it.
func (d *daemon) socket() string { return filepath.Join(d.dir, "jaco.sock") }
