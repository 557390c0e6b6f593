package hooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// TestAdoptionAfterAgentRestart starts launch with one runtime, drops it
// without stopping anything (jacod exited), and follows the replica with
// a fresh runtime.
func TestAdoptionAfterAgentRestart(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	launch := "#!/bin/sh\necho ready\nwhile [ ! -e \"$GATE\" ]; do sleep 0.05; done\necho leaving\nexit 7\n"
	rep := newReplica(t, map[string]string{"launch": launch}, func(s *api.ServiceSpec) {
		s.Env = []string{"GATE=" + gate}
	})
	prepareAndStart(t, controllerFor(t, newRuntime(t), rep))
	waitLog(t, rep, "ready")

	shim, ok, err := readProc(filepath.Join(rep.Dir, shimFile))
	if err != nil || !ok {
		t.Fatalf("shim record: %v %v", ok, err)
	}
	if ppid := parentOf(t, shim.Pid); ppid == os.Getpid() {
		t.Fatalf("shim %d is a child of the runtime's process; it would die with jacod", shim.Pid)
	}

	c := controllerFor(t, newRuntime(t), rep)
	ctx := testContext(t)
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("Prepare of a running replica: %v", err)
	}
	if err := c.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("Start of a running replica = %v, want ErrAlreadyStarted", err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if exit := waitExit(t, c); exit.Code != 7 {
		t.Fatalf("adopted replica exit = %+v, want code 7", exit)
	}
	if !strings.Contains(readLog(t, rep), "leaving") {
		t.Errorf("output after adoption missing from the log:\n%s", readLog(t, rep))
	}
	if err := c.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("Start of an ended replica = %v, want ErrAlreadyStarted", err)
	}
}

func TestAdoptedReplicaStops(t *testing.T) {
	launch := "#!/bin/sh\ntrap 'echo got INT; exit 0' INT\necho ready\nwhile :; do sleep 0.05; done\n"
	rep := newReplica(t, map[string]string{"launch": launch}, nil)
	prepareAndStart(t, controllerFor(t, newRuntime(t), rep))
	waitLog(t, rep, "ready")

	c := controllerFor(t, newRuntime(t), rep)
	if err := c.Stop(testContext(t)); err != nil {
		t.Fatalf("Stop of an adopted replica: %v", err)
	}
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v, want code 0", exit)
	}
	if !strings.Contains(readLog(t, rep), "got INT") {
		t.Fatalf("launch never saw SIGINT:\n%s", readLog(t, rep))
	}
}

// TestShimKilledOutright: a shim killed with SIGKILL leaves launch
// running with no one to record its exit. Wait follows launch, Stop
// signals launch's group itself, and Wait then says the exit is unknown
// instead of inventing one.
func TestShimKilledOutright(t *testing.T) {
	launch := "#!/bin/sh\ntrap 'echo got INT; exit 0' INT\necho ready\nwhile :; do sleep 0.05; done\n"
	rep := newReplica(t, map[string]string{"launch": launch}, nil)
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	waitLog(t, rep, "ready")
	shim, _, err := readProc(filepath.Join(rep.Dir, shimFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(shim.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for shim.alive() {
		if time.Now().After(deadline) {
			t.Fatalf("shim %d still alive after SIGKILL", shim.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}

	short, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait while launch still runs = %v, want it to keep waiting", err)
	}
	if err := c.Remove(testContext(t)); err == nil {
		t.Fatal("Remove succeeded while launch still runs")
	}
	if err := c.Stop(testContext(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !strings.Contains(readLog(t, rep), "got INT") {
		t.Fatalf("launch never saw SIGINT:\n%s", readLog(t, rep))
	}
	if _, err := c.Wait(testContext(t)); !errors.Is(err, ErrShimLost) {
		t.Fatalf("Wait = %v, want ErrShimLost", err)
	}
	if err := c.Remove(testContext(t)); err != nil {
		t.Fatalf("Remove: %v", err)
	}
}

func parentOf(t *testing.T, pid int) int {
	t.Helper()
	fields, err := statFields(pid)
	if err != nil || len(fields) < 2 {
		t.Fatalf("stat of pid %d: %q, %v", pid, fields, err)
	}
	ppid, err := strconv.Atoi(fields[1]) // field 4
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}
