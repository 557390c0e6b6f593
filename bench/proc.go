package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/internal/testcluster"
)

// newProc returns a server process of the benchmark (a jacod, an etcd,
// the echo server): internal/testcluster's, which appends its output to
// log across restarts and kills it when the benchmark dies. It gets a
// process group of its own, so a Ctrl-C in the terminal reaches only the
// benchmark, which then stops it.
func newProc(name, bin, log string, args ...string) *testcluster.Process {
	return testcluster.NewProcess(testcluster.Spec{
		Name: name, Path: bin, Args: args, Log: log, Harness: "jaco-bench", OwnGroup: true,
	})
}

// startProc starts p; servers are waited for by their clients, not by a
// line of their output.
func startProc(p *testcluster.Process) error {
	_, err := p.Start(context.Background())
	return err
}

// stopTimeout is how long a server has to exit after SIGTERM.
const stopTimeout = 10 * time.Second

// stopProc asks p to end (SIGTERM), then kills it after stopTimeout,
// saying so.
func stopProc(p *testcluster.Process) {
	if err := p.Stop(stopTimeout); err != nil {
		log.Printf("%v", err)
	}
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
