package hooks

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// testIdleShimEnv makes the test binary a process whose command line is a
// shim's and which only waits for SIGTERM (see TestMain).
const testIdleShimEnv = "JACO_HOOKS_TEST_IDLE_SHIM"

func idleUntilTerm() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	os.Exit(0)
}

// startIdleShim runs "<test binary> hook-shim dir" until the test ends.
func startIdleShim(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, ShimCommand, dir)
	cmd.Env = append(os.Environ(), testIdleShimEnv+"=1", "GORACE=atexit_sleep_ms=0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// StopShimsUnder ends the shims of replicas under its root, and only
// those.
func TestStopShimsUnderEndsOnlyItsOwn(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	mine := []*exec.Cmd{
		startIdleShim(t, filepath.Join(root, "replicas", "a")),
		startIdleShim(t, filepath.Join(root, "replicas", "b")),
	}
	theirs := startIdleShim(t, filepath.Join(other, "replicas", "c"))
	// The shims have their command lines once they run.
	deadline := time.Now().Add(10 * time.Second)
	for len(shimPIDsUnder(root)) < len(mine) || len(shimPIDsUnder(other)) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("shims not seen running: %v under root, %v under the other", shimPIDsUnder(root), shimPIDsUnder(other))
		}
		time.Sleep(10 * time.Millisecond)
	}

	if n := StopShimsUnder(root, 5*time.Second); n != len(mine) {
		t.Fatalf("StopShimsUnder found %d shims, want %d", n, len(mine))
	}
	for _, cmd := range mine {
		if PIDAlive(cmd.Process.Pid) {
			t.Errorf("shim %d under the root still runs", cmd.Process.Pid)
		}
	}
	if !PIDAlive(theirs.Process.Pid) {
		t.Error("the shim of another data dir was stopped")
	}
}
