package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procState returns the state letter of /proc/pid/stat (R, S, T, ...).
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

// Verify checks that the pid signals go to is the program itself (every
// wrapper exec'd it rather than forking it) and, on a host, that it runs
// in the host's namespace: a harness whose SIGSTOP reached nsenter would
// test nothing.
func (p *Process) Verify() error {
	pid := p.Pid()
	if pid == 0 {
		return fmt.Errorf("verify %s: not running", p.spec.Name)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return fmt.Errorf("verify %s: %w", p.spec.Name, err)
	}
	want, err := exec.LookPath(p.spec.Path)
	if err == nil {
		want, err = filepath.EvalSymlinks(want)
	}
	if err != nil {
		return fmt.Errorf("verify %s: %w", p.spec.Name, err)
	}
	if exe != want {
		return fmt.Errorf("pid %d of %s runs %s, want %s (did a wrapper not exec it?)", pid, p.spec.Name, exe, want)
	}
	if p.spec.Host == nil {
		return nil
	}
	var got, ns syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &got); err != nil {
		return fmt.Errorf("verify %s: %w", p.spec.Name, err)
	}
	if err := syscall.Stat(p.spec.Host.Path(), &ns); err != nil {
		return fmt.Errorf("verify %s: %w", p.spec.Name, err)
	}
	if got.Ino != ns.Ino || got.Dev != ns.Dev {
		return fmt.Errorf("%s (pid %d) is not in network namespace %s", p.spec.Name, pid, p.spec.Host.name)
	}
	return nil
}

// HasCapability reports whether capability bit c is in pid's effective
// set: what a caller that dropped one (Spec.Wrap) checks.
func HasCapability(pid, c int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, err
	}
	for line := range strings.Lines(string(b)) {
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
