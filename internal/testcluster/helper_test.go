package testcluster

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper program instead of running
// tests: "serve" listens on $TESTCLUSTER_ADDR and says where, "dial"
// connects to it, "fail" exits 3 at once, "deaf" also ignores SIGTERM.
const helperEnv = "TESTCLUSTER_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "serve", "deaf":
		os.Exit(serveHelper())
	case "dial":
		c, err := net.DialTimeout("tcp", os.Getenv("TESTCLUSTER_ADDR"), 2*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	case "fail":
		fmt.Println("helper: giving up")
		os.Exit(3)
	}
	os.Exit(2)
}

// serveHelper listens, logs a line split across two writes (a watcher
// must see it whole) and runs until SIGTERM, which "deaf" ignores.
func serveHelper() int {
	l, err := net.Listen("tcp", os.Getenv("TESTCLUSTER_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	sigs := make(chan os.Signal, 1)
	if os.Getenv(helperEnv) == "deaf" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sigs, syscall.SIGTERM)
	}
	fmt.Print(`time=1 level=INFO msg="jacod ser`)
	time.Sleep(10 * time.Millisecond)
	fmt.Printf("ving\" listen=%s\n", l.Addr())
	<-sigs
	return 0
}

// helper returns a process running this test binary as the named helper,
// serving on addr, on host hs (nil: here).
func helper(t *testing.T, mode, addr string, hs *Host) *Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := NewProcess(Spec{
		Name:    "helper " + mode,
		Path:    exe,
		Env:     append(os.Environ(), helperEnv+"="+mode, "TESTCLUSTER_ADDR="+addr),
		Host:    hs,
		Log:     t.TempDir() + "/helper.log",
		Harness: "test",
		Ready:   ServingLine,
	})
	t.Cleanup(func() {
		if err := p.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return p
}

// lines counts the lines of s that start with prefix.
func lines(s, prefix string) int {
	n := 0
	for l := range strings.Lines(s) {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
