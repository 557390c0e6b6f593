package main

import (
	"context"
	"os"
	"testing"
)

// connsClientEnv makes this test binary the client process of
// TestConnsFloorCountsEachConnection (TestConnsClientProcess).
const connsClientEnv = "JACO_BENCH_CONNS_CLIENT"

// TestConnsFloorCountsEachConnection: the floor measured for 20
// connections is the server's growth for each: at least gRPC's reader,
// writer and keepalive goroutines and one handler per open stream (five),
// and some heap; RSS grows too.
func TestConnsFloorCountsEachConnection(t *testing.T) {
	t.Setenv(connsClientEnv, "1")
	client := []string{os.Args[0], "-test.run=^TestConnsClientProcess$", "--"}
	shape := jacodConns
	shape.count = 20
	f, err := measureConns(context.Background(), client, t.TempDir(), shape)
	if err != nil {
		t.Fatal(err)
	}
	if f.goroutines < float64(3+shape.streams)-0.5 || f.goroutines > float64(3+shape.streams+1) {
		t.Errorf("%.1f goroutines a connection, want %d (three of gRPC's, one per stream)", f.goroutines, 3+shape.streams)
	}
	if f.heapKB < 1 || f.heapKB > 1024 {
		t.Errorf("%.1f kB of heap a connection, want a few tens", f.heapKB)
	}
	t.Log(f)
}

// TestConnsClientProcess is the client process of the test above, not a
// test of its own: run without connsClientEnv it returns at once.
func TestConnsClientProcess(t *testing.T) {
	if os.Getenv(connsClientEnv) == "" {
		return
	}
	cmd := connsClientCmd()
	cmd.SetArgs(childArgs())
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}

// childArgs are the arguments after "--" of a test binary run as another
// process of a test (TestConnsClientProcess, TestEchoServerProcess).
func childArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}
