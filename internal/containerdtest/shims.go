package containerdtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killShims SIGKILLs every shim started by the daemon at address, and the
// processes below them first (containers outlive a killed shim otherwise).
func killShims(address string) error {
	procs, err := listProcs()
	if err != nil {
		return err
	}
	var shims []int
	for pid, p := range procs {
		if isShimOf(p.cmdline, address) {
			shims = append(shims, pid)
		}
	}
	if len(shims) == 0 {
		return nil
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var victims []int
	var walk func(pid int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			walk(c)
		}
		victims = append(victims, pid) // descendants before their parent
	}
	for _, s := range shims {
		walk(s)
	}
	for _, pid := range victims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Wait (briefly) until they are gone so unmounting afterwards works.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range victims {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// isShimOf tells whether a command line is a containerd shim of the daemon
// at address ("containerd-shim-runc-v2 -namespace N -id ID -address A").
func isShimOf(cmdline []string, address string) bool {
	if len(cmdline) == 0 || !strings.Contains(filepath.Base(cmdline[0]), "containerd-shim") {
		return false
	}
	for i, a := range cmdline {
		if (a == "-address" || a == "--address") && i+1 < len(cmdline) && cmdline[i+1] == address {
			return true
		}
	}
	return false
}

type proc struct {
	ppid    int
	cmdline []string
}

func listProcs() (map[int]proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		ppid, err := parsePPID(stat)
		if err != nil {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		var args []string
		for _, a := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
			if len(a) > 0 {
				args = append(args, string(a))
			}
		}
		out[pid] = proc{ppid: ppid, cmdline: args}
	}
	return out, nil
}

// parsePPID reads the fourth field of /proc/PID/stat; the second (comm)
// may hold spaces and parentheses, so parsing starts after the last ')'.
func parsePPID(stat []byte) (int, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[1])
}
