package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const (
	preparing = api.TaskState_TASK_STATE_PREPARING
	starting  = api.TaskState_TASK_STATE_STARTING
	running   = api.TaskState_TASK_STATE_RUNNING
	complete  = api.TaskState_TASK_STATE_COMPLETE
	shutdown  = api.TaskState_TASK_STATE_SHUTDOWN
	failedSt  = api.TaskState_TASK_STATE_FAILED
	rejected  = api.TaskState_TASK_STATE_REJECTED
)

func calls(rt *fakeRuntime, call string, n int) func() (bool, string) {
	return func() (bool, string) {
		return rt.count(call) >= n, fmt.Sprint("calls: ", rt.callLog())
	}
}

type runningAgent struct {
	agent  *Agent
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error
}

// stop ends the agent and waits for Run to return.
func (r *runningAgent) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("Run: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func testConfig(dir string, managers []string, rts ...exec.Runtime) Config {
	return Config{
		NodeID: "node-1", NodeName: "worker-1", Dir: dir,
		Dial: dialInsecure, Managers: managers, Runtimes: rts,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReconnectMin:   10 * time.Millisecond,
		ReconnectMax:   50 * time.Millisecond,
		StatusInterval: 10 * time.Millisecond,
	}
}

func startAgent(t *testing.T, cfg Config) *runningAgent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningAgent{agent: a, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = a.Run(ctx)
		if r.err != nil {
			t.Errorf("Run: %v", r.err)
		}
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func imageTask(id string) *api.Task {
	return &api.Task{
		Id: id, ServiceId: "svc", ServiceName: "web", Slot: 1, NodeId: "node-1",
		DesiredState: running,
		Status:       &api.TaskStatus{State: api.TaskState_TASK_STATE_ASSIGNED},
		Spec:         &api.ServiceSpec{Name: "web", Image: "busybox"},
	}
}

// setup starts a dispatcher, a containerd-named fake runtime and an agent.
func setup(t *testing.T) (*fakeDispatcher, *fakeRuntime, string) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	dir := t.TempDir()
	startAgent(t, testConfig(dir, []string{d.addr}, rt))
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	return d, rt, dir
}

func TestReplicaLifecycle(t *testing.T) {
	d, rt, dir := setup(t)
	releasePrepare := rt.hold("prepare", "t1")
	releaseStart := rt.hold("start", "t1")
	d.assign(imageTask("t1"))

	waitfor.Holds(t, 10*time.Second, "PREPARING", d.lastIs("t1", preparing))
	releasePrepare()
	waitfor.Holds(t, 10*time.Second, "STARTING", d.lastIs("t1", starting))
	releaseStart()
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	if got, want := d.states("t1"), []api.TaskState{preparing, starting, running}; !slices.Equal(got, want) {
		t.Fatalf("reported states %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "replicas", "t1")); err != nil {
		t.Fatalf("replica dir: %v", err)
	}

	// Desired SHUTDOWN stops the replica and says so.
	shut := imageTask("t1")
	shut.DesiredState = shutdown
	d.assign(shut)
	waitfor.Holds(t, 10*time.Second, "SHUTDOWN", d.lastIs("t1", shutdown))
	if rt.count("stop t1") != 1 || rt.isRunning("t1") {
		t.Fatalf("after SHUTDOWN: calls %v, running %v", rt.callLog(), rt.isRunning("t1"))
	}

	// Removed: the runtime removes it and the agent forgets it.
	d.unassign(false, "t1")
	waitfor.Holds(t, 10*time.Second, "remove", calls(rt, "remove t1", 1))
	waitfor.Holds(t, 10*time.Second, "replica dir gone", func() (bool, string) {
		_, err := os.Stat(filepath.Join(dir, "replicas", "t1"))
		return errors.Is(err, os.ErrNotExist), fmt.Sprint("stat: ", err)
	})
}

func TestExitReported(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exit     exec.Exit
		state    api.TaskState
		reason   string
		exitCode int32
	}{
		{"exit 0 completes", exec.Exit{Code: 0}, complete, "", 0},
		{"exit 3 fails", exec.Exit{Code: 3}, failedSt, ReasonExitCode, 3},
		{"killed fails", exec.Exit{Code: 137, Signal: "SIGKILL"}, failedSt, ReasonExitCode, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rt, _ := setup(t)
			d.assign(imageTask("t1"))
			waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
			rt.end("t1", tc.exit)
			waitfor.Holds(t, 10*time.Second, tc.state.String(), d.lastIs("t1", tc.state))
			st := d.last("t1")
			if st.GetReason() != tc.reason || st.GetExitCode() != tc.exitCode {
				t.Fatalf("status %v, want reason %q exit code %d", st, tc.reason, tc.exitCode)
			}
			if rt.count("stop t1") != 0 {
				t.Fatalf("a replica that ended was stopped: %v", rt.callLog())
			}
		})
	}
}

func TestFailuresBeforeRunning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     string
		state  api.TaskState
		reason string
	}{
		{"prepare fails", "prepare", failedSt, ReasonPrepareFailed},
		{"start fails", "start", failedSt, ReasonStartFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rt, _ := setup(t)
			rt.fail(tc.op, "t1", errors.New("boom"))
			d.assign(imageTask("t1"))
			waitfor.Holds(t, 10*time.Second, tc.state.String(), d.lastIs("t1", tc.state))
			if got := d.last("t1").GetReason(); got != tc.reason {
				t.Fatalf("reason %q, want %q", got, tc.reason)
			}
		})
	}
}

func TestMissingRuntimeRejects(t *testing.T) {
	d, _, _ := setup(t)
	task := imageTask("t1")
	task.Spec = &api.ServiceSpec{Name: "proc", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("#!/bin/sh\n")}}}
	d.assign(task)
	waitfor.Holds(t, 10*time.Second, "REJECTED", d.lastIs("t1", rejected))
	if st := d.last("t1"); st.GetReason() != ReasonNoRuntime {
		t.Fatalf("status %v, want reason %s", st, ReasonNoRuntime)
	}
}

func closedPort(t *testing.T) uint32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	n, _ := strconv.Atoi(p)
	return uint32(n)
}

func TestHealthChecks(t *testing.T) {
	fast := func(hc *api.HealthCheck) *api.HealthCheck {
		hc.Interval = durationpb.New(10 * time.Millisecond)
		hc.Retries = 2
		return hc
	}
	t.Run("healthy command: STARTING then RUNNING", func(t *testing.T) {
		d, rt, _ := setup(t)
		task := imageTask("t1")
		task.Spec.Health = fast(&api.HealthCheck{Test: &api.HealthCheck_Command{Command: &api.CommandCheck{Argv: []string{"true"}}}})
		release := rt.hold("exec", "t1")
		d.assign(task)
		waitfor.Holds(t, 10*time.Second, "a health probe", calls(rt, "exec t1", 1))
		time.Sleep(30 * time.Millisecond) // RUNNING must wait for the probe
		if got := d.states("t1"); slices.Contains(got, running) {
			t.Fatalf("RUNNING before the first healthy probe: %v", got)
		}
		release()
		waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	})
	t.Run("tcp to a closed port: FAILED unhealthy", func(t *testing.T) {
		d, rt, _ := setup(t)
		task := imageTask("t1")
		task.Spec.Health = fast(&api.HealthCheck{Test: &api.HealthCheck_Tcp{Tcp: &api.TCPCheck{Port: closedPort(t)}}})
		d.assign(task)
		waitfor.Holds(t, 10*time.Second, "FAILED", d.lastIs("t1", failedSt))
		if st := d.last("t1"); st.GetReason() != ReasonUnhealthy {
			t.Fatalf("status %v, want reason %s", st, ReasonUnhealthy)
		}
		if d.sawState("t1", running) || rt.count("stop t1") != 1 || rt.isRunning("t1") {
			t.Fatalf("states %v, calls %v: want never RUNNING and stopped once", d.states("t1"), rt.callLog())
		}
	})
}

func TestNotBeforeDelaysStart(t *testing.T) {
	d, rt, _ := setup(t)
	task := imageTask("t1")
	task.NotBefore = timestamppb.New(time.Now().Add(300 * time.Millisecond))
	start := time.Now()
	d.assign(task)
	waitfor.Holds(t, 10*time.Second, "prepare", calls(rt, "prepare t1", 1))
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("prepared %v after assignment, before not_before", waited)
	}
}

func TestCompleteSetRemovesAbsentReplicas(t *testing.T) {
	d, rt, _ := setup(t)
	d.assign(imageTask("t1"), imageTask("t2"))
	waitfor.Holds(t, 10*time.Second, "t1 RUNNING", d.lastIs("t1", running))
	waitfor.Holds(t, 10*time.Second, "t2 RUNNING", d.lastIs("t2", running))
	d.unassign(true, "t1")
	waitfor.Holds(t, 10*time.Second, "t1 removed", calls(rt, "remove t1", 1))
	if rt.count("stop t1") != 1 {
		t.Fatalf("t1 removed without a stop first: %v", rt.callLog())
	}
	if rt.count("stop t2")+rt.count("remove t2") != 0 || !rt.isRunning("t2") {
		t.Fatalf("t2 touched though still assigned: %v", rt.callLog())
	}
}

func TestShutdownDuringPrepare(t *testing.T) {
	d, rt, _ := setup(t)
	rt.hold("prepare", "t1") // never let go: only the shutdown ends it
	d.assign(imageTask("t1"))
	waitfor.Holds(t, 10*time.Second, "PREPARING", d.lastIs("t1", preparing))
	shut := imageTask("t1")
	shut.DesiredState = shutdown
	d.assign(shut)
	waitfor.Holds(t, 10*time.Second, "SHUTDOWN", d.lastIs("t1", shutdown))
	if got, want := d.states("t1"), []api.TaskState{preparing, shutdown}; !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	if rt.count("start t1") != 0 {
		t.Fatalf("started after shutdown was asked: %v", rt.callLog())
	}
}

// TestStartsBounded: with one start slot, a second replica is not
// prepared until the first has started; then it is.
func TestStartsBounded(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	cfg := testConfig(t.TempDir(), []string{d.addr}, rt)
	cfg.MaxConcurrentStarts = 1
	startAgent(t, cfg)
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	releaseStart := rt.hold("start", "t1")
	d.assign(imageTask("t1"))
	waitfor.Holds(t, 10*time.Second, "t1 STARTING", d.lastIs("t1", starting))
	second := imageTask("t2")
	second.Slot = 2
	d.assign(second)
	// t2's runner is up and waiting for the slot; give it the time it would
	// need to report PREPARING were it not bounded.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if len(d.states("t2")) > 0 {
			t.Fatalf("t2 reported %v while t1 held the only start slot", d.states("t2"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	releaseStart()
	waitfor.Holds(t, 10*time.Second, "t2 RUNNING", d.lastIs("t2", running))
}

// A replica on networks is reported RUNNING with its addresses on them:
// service discovery answers with nothing else.
func TestRunningCarriesNetworkAddresses(t *testing.T) {
	d, rt, _ := setup(t)
	rt.mu.Lock()
	rt.addrs["t1"] = []exec.NetworkAddress{{NetworkID: "n1", Addr: netip.MustParseAddr("10.1.0.66")}}
	rt.mu.Unlock()
	d.assign(imageTask("t1"), imageTask("t2"))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t2", running))
	got := d.last("t1").GetAddresses()
	if len(got) != 1 || got[0].GetNetworkId() != "n1" || got[0].GetAddress() != "10.1.0.66" {
		t.Fatalf("t1 RUNNING with addresses %v, want n1 10.1.0.66", got)
	}
	if a := d.last("t2").GetAddresses(); len(a) != 0 {
		t.Fatalf("t2 (no networks) RUNNING with addresses %v", a)
	}
}

// Redescribe reopens the session with the node's description as it is
// now (its overlay broke or mended).
func TestRedescribeSendsTheNewDescription(t *testing.T) {
	d := newFakeDispatcher(t)
	var broken atomic.Bool
	cfg := testConfig(t.TempDir(), []string{d.addr}, newFakeRuntime(exec.RuntimeContainerd))
	cfg.Description = func() *api.NodeDescription {
		return &api.NodeDescription{Hostname: "h", Overlay: &api.OverlayEndpoint{Unavailable: broken.Load()}}
	}
	r := startAgent(t, cfg)
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	broken.Store(true)
	r.agent.Redescribe()
	waitfor.Holds(t, 10*time.Second, "a second session", d.sessionsReach(2))
	waitfor.Holds(t, 10*time.Second, "the new description", func() (bool, string) {
		desc := d.description()
		return desc.GetOverlay().GetUnavailable(), fmt.Sprint("description ", desc)
	})
}
