package hooks

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// testShimEnv makes the test binary act as the shim (see TestMain).
const testShimEnv = "JACO_HOOKS_TEST_SHIM"

func TestMain(m *testing.M) {
	if os.Getenv(testShimEnv) == "1" {
		os.Exit(ShimMain(os.Args[1:]))
	}
	if os.Getenv(testNotifyEnv) == "1" {
		os.Exit(sendNotify(os.Args[1:]))
	}
	if os.Getenv(testIdleShimEnv) == "1" {
		idleUntilTerm()
	}
	// The network tests make a bridge and iptables rules: the whole run
	// gets a network namespace of its own (as root), which takes them along.
	os.Exit(containerdtest.RunIsolated(m))
}

// newRuntime returns a runtime whose shim is this test binary, with short
// pauses so that tests run fast.
func newRuntime(t *testing.T, opts ...Option) *Runtime {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := []Option{
		// The race detector sleeps a second before a process exits; the
		// shim exits twice per replica.
		WithShim([]string{self}, testShimEnv+"=1", "GORACE=atexit_sleep_ms=0"),
		WithPrepareBackoff(10 * time.Millisecond),
		WithPollInterval(20 * time.Millisecond),
		WithKillWait(3 * time.Second),
		WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
	}
	return New(append(base, opts...)...)
}

// newReplica makes a replica of a service whose bundle holds files (shell
// scripts) and whose spec edit may change. Every process it leaves
// running is killed when the test ends.
func newReplica(t *testing.T, files map[string]string, edit func(*api.ServiceSpec)) exec.Replica {
	t.Helper()
	root := t.TempDir()
	bundle := &api.HookBundle{Files: map[string][]byte{}}
	for name, body := range files {
		bundle.Files[name] = []byte(body)
	}
	spec := &api.ServiceSpec{Name: "web", Bundle: bundle}
	if edit != nil {
		edit(spec)
	}
	rep := exec.Replica{
		Task: &api.Task{
			Id: "replica-1", ServiceId: "service-1", ServiceName: "web", Slot: 3, Spec: spec,
		},
		NodeID:   "node-1",
		NodeName: "worker-a",
		Dir:      filepath.Join(root, "replica"),
		LogPath:  filepath.Join(root, "logs", "replica-1.log"),
	}
	if err := os.MkdirAll(rep.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeftovers(rep.Dir) })
	return rep
}

// killLeftovers kills launch's group and the shim of a test that failed
// before stopping them.
func killLeftovers(dir string) {
	if p, ok, _ := readProc(filepath.Join(dir, childFile)); ok {
		p.signalGroup(syscall.SIGKILL)
	}
	if p, ok, _ := readProc(filepath.Join(dir, shimFile)); ok {
		p.signal(syscall.SIGKILL)
	}
}

func controllerFor(t *testing.T, rt *Runtime, rep exec.Replica) exec.Controller {
	t.Helper()
	c, err := rt.Controller(rep)
	if err != nil {
		t.Fatalf("Controller: %v", err)
	}
	return c
}

// prepareAndStart runs Prepare and Start, failing the test on an error.
func prepareAndStart(t *testing.T, c exec.Controller) {
	t.Helper()
	ctx := testContext(t)
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitExit runs Wait with a deadline.
func waitExit(t *testing.T, c exec.Controller) exec.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exit, err := c.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return exit
}

func readLog(t *testing.T, rep exec.Replica) string {
	t.Helper()
	data, err := os.ReadFile(rep.LogPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// waitLog waits until the replica's log holds want.
func waitLog(t *testing.T, rep exec.Replica, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		log := readLog(t, rep)
		if strings.Contains(log, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log never held %q; last seen:\n%s", want, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
