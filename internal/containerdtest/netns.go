package containerdtest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// isolatedEnv marks a test binary already re-run in its own network
// namespace.
const isolatedEnv = "JACO_TEST_ISOLATED_NETNS"

// RunIsolated runs a package's tests in a network namespace of their own
// when run as root: call it from TestMain as os.Exit(RunIsolated(m)).
// It re-runs the test binary under `unshare --net` with loopback up, so
// the CNI bridges, iptables rules and sysctls the tests make live and die
// with that namespace instead of the machine's. Without root it just runs
// the tests (which then skip).
func RunIsolated(m *testing.M) int {
	if os.Geteuid() != 0 {
		return m.Run()
	}
	if os.Getenv(isolatedEnv) == "" {
		// The parent: re-run this binary with the same flags inside a new
		// network namespace, passing its output and exit code through.
		cmd := NetnsCommand(os.Args[0], isolatedEnv)
		// The child dies with this process (go test's timeout kills it);
		// the death signal belongs to the starting thread, so pin it.
		runtime.LockOSThread()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode()
			}
			fmt.Fprintf(os.Stderr, "run tests in a network namespace: %v\n", err)
			return 1
		}
		return 0
	}
	return m.Run()
}

// NetnsCommand runs program with this process's arguments again, under
// `unshare --net` with loopback up, with env=1 in its environment so it
// knows it is the isolated run, and this process's stdio.
func NetnsCommand(program, env string) *exec.Cmd {
	script := `ip link set lo up && exec "$@"`
	args := append([]string{"--net", "--", "/bin/sh", "-c", script, "sh", program}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd
}
