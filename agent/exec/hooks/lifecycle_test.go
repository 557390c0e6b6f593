package hooks

import (
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

func TestLaunchGetsEnvArgsDirAndLog(t *testing.T) {
	launch := `#!/bin/sh
echo "svc=$JACO_SERVICE_NAME id=$JACO_REPLICA_ID slot=$JACO_SLOT node=$JACO_NODE_ID name=$JACO_NODE_NAME"
echo "foo=$FOO args=$* cwd=$(pwd)"
echo "to stderr" >&2
exit 0
`
	rep := newReplica(t, map[string]string{"launch": launch}, func(s *api.ServiceSpec) {
		s.Env = []string{"FOO=bar"}
		s.Command = []string{"one", "two"}
	})
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 0 || exit.Signal != "" {
		t.Fatalf("exit = %+v, want code 0", exit)
	}
	log := readLog(t, rep)
	for _, want := range []string{
		"svc=web id=replica-1 slot=3 node=node-1 name=worker-a",
		"foo=bar args=one two cwd=" + filepath.Join(rep.Dir, "bundle"),
		"to stderr",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestStartReportsALaunchThatCannotRun(t *testing.T) {
	rep := newReplica(t, map[string]string{"launch": "no interpreter line here\n"}, nil)
	c := controllerFor(t, newRuntime(t), rep)
	if err := c.Prepare(testContext(t)); err != nil {
		t.Fatal(err)
	}
	err := c.Start(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "exec format error") {
		t.Fatalf("Start error = %v, want exec format error", err)
	}
	if _, err := c.Wait(testContext(t)); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Wait after failed Start = %v, want ErrNotFound", err)
	}
}

// finishScript records that finish ran, in $MARK.
const finishScript = "#!/bin/sh\necho \"finish ran\" >> \"$MARK\"\n"

func TestFinish(t *testing.T) {
	loop := "#!/bin/sh\ntrap 'exit 0' INT\necho ready\nwhile :; do sleep 0.05; done\n"
	for _, tc := range []struct {
		name       string
		launch     string
		end        func(t *testing.T, rep exec.Replica, c exec.Controller)
		wantExit   exec.Exit
		wantFinish bool
	}{
		{name: "exit 1", launch: "#!/bin/sh\nexit 1\n", wantExit: exec.Exit{Code: 1}, wantFinish: true},
		{name: "exit 0 unasked", launch: "#!/bin/sh\nexit 0\n", wantExit: exec.Exit{Code: 0}, wantFinish: true},
		{
			name: "killed by someone else", launch: loop, end: killLaunch,
			wantExit: exec.Exit{Code: 137, Signal: "SIGKILL"}, wantFinish: true,
		},
		{
			name: "stopped", launch: loop, end: stopReplica,
			wantExit: exec.Exit{Code: 0}, wantFinish: false,
		},
		{
			name: "stopped but exits 1", launch: "#!/bin/sh\ntrap 'exit 1' INT\necho ready\nwhile :; do sleep 0.05; done\n",
			end: stopReplica, wantExit: exec.Exit{Code: 1}, wantFinish: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := filepath.Join(t.TempDir(), "finish")
			rep := newReplica(t, map[string]string{"launch": tc.launch, "finish": finishScript},
				func(s *api.ServiceSpec) { s.Env = []string{"MARK=" + mark} })
			c := controllerFor(t, newRuntime(t), rep)
			prepareAndStart(t, c)
			if tc.end != nil {
				waitLog(t, rep, "ready")
				tc.end(t, rep, c)
			}
			exit := waitExit(t, c)
			if exit.Code != tc.wantExit.Code || exit.Signal != tc.wantExit.Signal {
				t.Fatalf("exit = %+v, want %+v", exit, tc.wantExit)
			}
			// Wait returns only after finish is done.
			if got := fileExists(mark); got != tc.wantFinish {
				t.Fatalf("finish ran: %v, want %v; log:\n%s", got, tc.wantFinish, readLog(t, rep))
			}
		})
	}
}

func killLaunch(t *testing.T, rep exec.Replica, _ exec.Controller) {
	p, ok, err := readProc(filepath.Join(rep.Dir, childFile))
	if err != nil || !ok {
		t.Fatalf("launch record: %v %v", ok, err)
	}
	if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func stopReplica(t *testing.T, _ exec.Replica, c exec.Controller) {
	if err := c.Stop(testContext(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestRemoveRunsCleanupAndDeletesState(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "cleanup")
	launch := "#!/bin/sh\ntrap 'exit 0' INT\necho ready\nwhile :; do sleep 0.05; done\n"
	rep := newReplica(t, map[string]string{
		"launch":  launch,
		"cleanup": "#!/bin/sh\necho \"cleanup slot $JACO_SLOT\" >> \"$MARK\"\n",
	}, func(s *api.ServiceSpec) { s.Env = []string{"MARK=" + mark} })
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	waitLog(t, rep, "ready")
	ctx := testContext(t)
	if err := c.Remove(ctx); err == nil {
		t.Fatal("Remove of a running replica succeeded")
	}
	if fileExists(mark) {
		t.Fatal("cleanup ran while the replica was running")
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitExit(t, c)
	for i := range 2 { // idempotent: the second Remove finds nothing to do
		if err := c.Remove(ctx); err != nil {
			t.Fatalf("Remove %d: %v", i+1, err)
		}
	}
	data, _ := os.ReadFile(mark)
	if string(data) != "cleanup slot 3\n" {
		t.Fatalf("cleanup output = %q, want one run", data)
	}
	entries, err := os.ReadDir(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("Remove left %v in the replica dir", entries)
	}
	if _, err := c.Wait(ctx); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Wait after Remove = %v, want ErrNotFound", err)
	}
}

func TestExecAndAddress(t *testing.T) {
	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n"}, func(s *api.ServiceSpec) {
		s.Env = []string{"FOO=bar"}
	})
	c := controllerFor(t, newRuntime(t), rep)
	ctx := testContext(t)
	if _, err := c.Exec(ctx, []string{"true"}); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Exec before Prepare = %v, want ErrNotFound", err)
	}
	if err := c.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	code, err := c.Exec(ctx, []string{"sh", "-c", `[ "$JACO_SLOT/$FOO" = 3/bar ] && [ -x ./launch ] && exit 5; exit 1`})
	if err != nil || code != 5 {
		t.Fatalf("Exec = %d, %v; want 5 (env and cwd of the replica)", code, err)
	}
	if addr, err := c.Address(ctx); err != nil || addr != "127.0.0.1" {
		t.Fatalf("Address = %q, %v", addr, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Exec(short, []string{"sleep", "10"}); err == nil {
		t.Fatal("Exec outliving its context returned no error")
	}
}

// A shim that recorded launch's exit is finishing: Remove right after Wait
// waits for it to end instead of failing "still running". A shim that
// recorded nothing is a running replica, refused at once.
func TestRemoveWaitsForAFinishingShim(t *testing.T) {
	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\nexit 0\n"}, nil)
	c := controllerFor(t, newRuntime(t), rep).(*controller)
	if err := os.MkdirAll(rep.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shim := osexec.Command("sleep", "60")
	if err := shim.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = shim.Wait(); close(ended) }()
	t.Cleanup(func() { _ = shim.Process.Kill(); <-ended })
	rec, err := recordOf(shim.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(c.path(shimFile), rec); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := c.Remove(ctx); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("Remove with a live shim and no exit record = %v, want still running", err)
	}

	if err := writeJSON(filepath.Join(rep.Dir, exitFile), exitRecord{At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	removed := make(chan error, 1)
	go func() { removed <- c.Remove(ctx) }()
	select {
	case err := <-removed:
		t.Fatalf("Remove returned %v while the shim still ran", err)
	case <-time.After(200 * time.Millisecond):
	}
	_ = shim.Process.Kill()
	<-ended
	select {
	case err := <-removed:
		if err != nil {
			t.Fatalf("Remove once the shim ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Remove still waiting 10s after the shim ended")
	}
}
