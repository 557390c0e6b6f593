package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one server process (a jacod or an etcd) the benchmark started.
// It can be killed and started again with the same arguments.
type proc struct {
	name string
	bin  string
	args []string
	log  string // stdout and stderr, appended across restarts

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has been reaped
}

// live holds every proc started, so that an interrupted run still ends
// them all (see stopAll).
var live struct {
	sync.Mutex
	procs map[*proc]bool
}

func newProc(name, bin, log string, args ...string) *proc {
	return &proc{name: name, bin: bin, args: args, log: log}
}

// start starts the process. It gets its own process group, so a Ctrl-C in
// the terminal reaches only the benchmark, which then stops it, and
// SIGKILL on the benchmark's death, so that nothing outlives it.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "\n=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	live.Lock()
	if live.procs == nil {
		live.procs = make(map[*proc]bool)
	}
	live.procs[p] = true
	live.Unlock()
	return nil
}

// pid is the running process's id, 0 when it is not running.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// signal sends sig and waits up to wait for the process to end; a process
// still there then gets SIGKILL.
func (p *proc) signal(sig syscall.Signal, wait time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
	live.Lock()
	delete(live.procs, p)
	live.Unlock()
}

// kill sends SIGKILL and reaps the process.
func (p *proc) kill() { p.signal(syscall.SIGKILL, 10*time.Second) }

// stop asks the process to end (SIGTERM), then kills it after 10 s.
func (p *proc) stop() { p.signal(syscall.SIGTERM, 10*time.Second) }

// running reports whether the process is still there.
func (p *proc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// stopAll kills every process still running; the last line of defence
// when the benchmark is interrupted.
func stopAll() {
	live.Lock()
	ps := make([]*proc, 0, len(live.procs))
	for p := range live.procs {
		ps = append(ps, p)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.kill() }()
	}
	wg.Wait()
}

// freePort asks the kernel for a free loopback port. The port is closed
// again before it is used, which leaves a small window for another program
// to take it; the servers then fail to start and the run stops.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times; 100 on every
// Linux this runs on.
const clockTicks = 100

// cpuSeconds is the user+system CPU time the process has used.
func cpuSeconds(pid int) (float64, error) {
	if pid == 0 {
		return 0, errors.New("not running")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields are counted from
	// the closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("odd /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return tickSeconds(f[11], f[12])
}

// tickSeconds is the sum of a and b, counts of clock ticks, in seconds.
func tickSeconds(a, b string) (float64, error) {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(x+y) / clockTicks, nil
}

// rssMiB is the process's resident set size.
func rssMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no VmRSS")
}

// selfCPUSeconds is the CPU time this benchmark process has used: the load
// generator's share of the machine.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
