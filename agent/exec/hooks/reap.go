package hooks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// StopShimsUnder ends every running shim ("jacod hook-shim DIR") whose
// replica directory is under root, and with it the replica: SIGTERM, the
// shim's "kill the group", then SIGKILL for those still running after
// grace. Shims outlive their jacod by design (a restarted daemon finds
// its replicas running); a tool or test that wipes a data dir ends them
// with this. It returns how many it found.
func StopShimsUnder(root string, grace time.Duration) int {
	abs, err := filepath.Abs(root)
	if err != nil {
		return 0
	}
	pids := shimPIDsUnder(abs)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, pid := range pids {
		for time.Now().Before(deadline) && PIDAlive(pid) {
			time.Sleep(10 * time.Millisecond)
		}
		if PIDAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return len(pids)
}

// shimPIDsUnder lists the processes whose command line is
// "... hook-shim DIR" with DIR under root.
func shimPIDsUnder(root string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 3 && args[1] == ShimCommand && strings.HasPrefix(args[2], root+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// PIDAlive reports whether process pid exists and is not a zombie.
func PIDAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}
