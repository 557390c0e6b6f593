package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// echoServerEnv makes this test binary the echo server of
// TestEchoAnswersJacosWrite (TestEchoServerProcess).
const echoServerEnv = "JACO_BENCH_ECHO_SERVER"

// TestEchoAnswersJacosWrite: the echo system is a process of its own
// that answers the rate benchmark's write, as jaco's client makes it,
// over the unix socket; a load through it is acknowledged in full.
func TestEchoAnswersJacosWrite(t *testing.T) {
	t.Setenv(echoServerEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := newEchoCluster(ctx, t.TempDir(), []string{os.Args[0], "-test.run=^TestEchoServerProcess$", "--"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if pid := c.pids()[0]; pid == 0 || pid == os.Getpid() {
		t.Fatalf("echo server pid %d, want a process of its own", pid)
	}
	ws, closeWriters, err := c.writers(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWriters()
	lr := runLoad(ctx, loadConfig{start: time.Now(), rate: 200, duration: time.Second, clients: 4, timeout: 5 * time.Second, queue: 200, drain: 5 * time.Second}, ws)
	if lr.acked != lr.scheduled || lr.scheduled != 200 {
		t.Fatalf("%d of %d writes acknowledged (errors %v, dropped %d), want all 200", lr.acked, lr.scheduled, lr.errs, lr.dropped)
	}
}

// TestEchoServerProcess is the server process of the test above, not a
// test of its own: run without echoServerEnv it returns at once.
func TestEchoServerProcess(t *testing.T) {
	if os.Getenv(echoServerEnv) == "" {
		return
	}
	cmd := echoServerCmd()
	cmd.SetArgs(childArgs())
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}
