package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec/hooks"
	"github.com/jaco-project/jaco/internal/stackdump"
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
	starts  int

	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error         // cmd.Wait's error, set before exited is closed
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
	// Cleanups run last registered first: stop the process, then show its
	// log if anything failed (including the stop itself).
	t.Cleanup(d.dumpLogOnFailure)
	t.Cleanup(d.cleanup)
	d.start()
	return d
}

// servingLine is jacod's "ready to serve" log line, in the text or the
// JSON format; it names the bound TCP address, which is how the test
// learns a port the kernel picked.
var servingLine = regexp.MustCompile(`msg="jacod serving".* listen=(\S+)|"msg":"jacod serving".*"listen":"([^"]+)"`)

func (d *daemon) start() {
	t := d.t
	t.Helper()
	d.starts++
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== integration: start %d of jacod %s at %s\n", d.starts, d.name, time.Now().Format(time.RFC3339Nano))
	w := &logWatch{file: logf, addr: make(chan string, 1)}
	args := append([]string{"--data-dir", d.dir, "--listen-addr", d.addr, "--node-name", d.name}, d.flags...)
	cmd := exec.Command(jacodBin, args...)
	cmd.Env = testEnv()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start jacod: %v", err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		// Wait returns once the output is copied, so the log is complete.
		d.waitErr = cmd.Wait()
		logf.Close()
		close(exited)
	}(d.exited)

	select {
	case addr := <-w.addr:
		if d.addr != "127.0.0.1:0" && addr != d.addr {
			t.Fatalf("restarted jacod listens on %s, asked for %s", addr, d.addr)
		}
		d.addr = addr
	case <-d.exited:
		t.Fatalf("jacod exited before serving: %v", d.waitErr)
	case <-time.After(startTimeout):
		t.Fatalf("jacod did not log %q within %v", "jacod serving", startTimeout)
	}
}

// running reports whether the process has not exited yet.
func (d *daemon) running() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the daemon, as a crash or power loss would stop it.
func (d *daemon) kill() {
	d.t.Helper()
	if !d.running() {
		d.t.Fatal("kill: jacod is not running")
	}
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// stop SIGTERMs the daemon and requires it to exit cleanly in time; after
// stopTimeout it is SIGKILLed and the test fails.
func (d *daemon) stop() {
	t := d.t
	t.Helper()
	if !d.running() {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.waitErr != nil {
			t.Errorf("jacod %s exited with %v after SIGTERM, want a clean exit", d.name, d.waitErr)
		}
	case <-time.After(stopTimeout):
		stackdump.QuitThenKill(d.cmd.Process, d.exited)
		t.Errorf("jacod %s did not stop within %v of SIGTERM; killed; the stacks it waited in:\n%s", d.name, stopTimeout, stackdump.Condense(d.log()))
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

// logWatch copies a daemon's output to its log file and hands over the
// address in the first serving line it sees.
type logWatch struct {
	mu      sync.Mutex
	file    *os.File
	partial []byte
	addr    chan string // buffered, receives at most one value
	found   bool
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.file.Write(p); err != nil {
		return 0, err
	}
	if w.found {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		w.partial = w.partial[i+1:]
		if m := servingLine.FindSubmatch(line); m != nil {
			w.addr <- string(m[1]) + string(m[2]) // one of them is empty
			w.found, w.partial = true, nil
			break
		}
	}
	return len(p), nil
}

// socket is the daemon's trusted local socket, where docs/design.md §12 puts it.
func (d *daemon) socket() string { return filepath.Join(d.dir, "jaco.sock") }
