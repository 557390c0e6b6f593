package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/db"
	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

func TestStaleSessionOpensNewOne(t *testing.T) {
	d, rt, _ := setup(t)
	d.assign(imageTask("t1"))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	d.expireSession()
	waitfor.Holds(t, 10*time.Second, "a second session", d.sessionsReach(2))
	rt.end("t1", exec.Exit{Code: 0})
	waitfor.Holds(t, 10*time.Second, "COMPLETE through the new session", d.lastIs("t1", complete))
	hb := d.heartbeatCount()
	waitfor.Holds(t, 10*time.Second, "heartbeats on the new session", func() (bool, string) {
		return d.heartbeatCount() > hb+1, fmt.Sprint("heartbeats: ", d.heartbeatCount())
	})
}

func TestDispatcherGoneKeepsReplicasAndResends(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	cfg := testConfig(t.TempDir(), []string{d.addr}, rt)
	var dials atomic.Int32
	cfg.Dial = func(ctx context.Context, addr string) (*grpc.ClientConn, error) {
		dials.Add(1)
		return dialInsecure(ctx, addr)
	}
	startAgent(t, cfg)
	d.assign(imageTask("t1"))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	addr := d.addr
	d.stop()

	// Nothing is stopped while the managers are away: not when the session
	// ends, nor when an attempt at a new one fails. A change is kept.
	gone := dials.Load()
	waitfor.Holds(t, 10*time.Second, "a failed attempt at a new session", func() (bool, string) {
		return dials.Load() >= gone+2, fmt.Sprint("attempts since the dispatcher went: ", dials.Load()-gone)
	})
	if !rt.isRunning("t1") || rt.count("stop t1") != 0 {
		t.Fatalf("replica disturbed by the dispatcher going away: %v", rt.callLog())
	}
	rt.end("t1", exec.Exit{Code: 7})

	sessions := d.sessionCount()
	d.start(addr)
	waitfor.Holds(t, 10*time.Second, "a new session", d.sessionsReach(sessions+1))
	waitfor.Holds(t, 10*time.Second, "FAILED re-sent", d.lastIs("t1", failedSt))
	if got := d.last("t1").GetExitCode(); got != 7 {
		t.Fatalf("exit code %d, want 7", got)
	}
}

func TestRestartReadoptsWithoutStopping(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	dir := t.TempDir()
	first := startAgent(t, testConfig(dir, []string{d.addr}, rt))
	d.assign(imageTask("t1"))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))

	// The managers go away and the agent process with them.
	addr := d.addr
	d.stop()
	first.stop(t)
	if !rt.isRunning("t1") || rt.count("stop t1") != 0 {
		t.Fatalf("agent exit disturbed the replica: %v", rt.callLog())
	}

	// A new agent over the same dir, with no manager configured: it finds
	// the replica in its db and adopts it before any manager answers.
	startAgent(t, testConfig(dir, nil, rt))
	waitfor.Holds(t, 10*time.Second, "adoption", calls(rt, "start t1", 2))
	if rt.count("prepare t1") != 1 || rt.count("stop t1") != 0 || !rt.isRunning("t1") {
		t.Fatalf("restart did not adopt cleanly: %v", rt.callLog())
	}

	// It finds the managers from the db and reports what happens next.
	d.start(addr)
	rt.end("t1", exec.Exit{Code: 0})
	waitfor.Holds(t, 10*time.Second, "COMPLETE from the new agent", d.lastIs("t1", complete))
	if rt.count("stop t1") != 0 {
		t.Fatalf("replica stopped: %v", rt.callLog())
	}
}

func TestRestartWithoutRunnableTasks(t *testing.T) {
	// A db from an earlier agent with a finished task: nothing is started.
	dir := t.TempDir()
	done := imageTask("old")
	done.Status = &api.TaskStatus{State: complete}
	storeTasks(t, dir, done)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	cfg := testConfig(dir, nil, rt)
	a := startAgent(t, cfg)
	time.Sleep(100 * time.Millisecond)
	a.stop(t)
	if got := rt.callLog(); len(got) != 0 {
		t.Fatalf("finished task touched after restart: %v", got)
	}
}

func TestLeaderLostReconnects(t *testing.T) {
	d, rt, _ := setup(t)
	d.assign(imageTask("t1"))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	d.loseLeader()
	waitfor.Holds(t, 10*time.Second, "a second session", d.sessionsReach(2))
	if rt.count("stop t1") != 0 || rt.count("start t1") != 1 {
		t.Fatalf("replica disturbed by a leader change: %v", rt.callLog())
	}
	// The new session's COMPLETE set still holds t1: it is left alone.
	rt.end("t1", exec.Exit{Code: 0})
	waitfor.Holds(t, 10*time.Second, "COMPLETE", d.lastIs("t1", complete))
}

func TestTriesManagersInTurn(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	dead := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(closedPort(t))))
	startAgent(t, testConfig(t.TempDir(), []string{dead, d.addr}, rt, newFakeRuntime(exec.RuntimeHooks)))
	waitfor.Holds(t, 10*time.Second, "a session through the second manager", d.sessionsReach(1))
	desc := d.description()
	if !slices.Equal(desc.GetRuntimes(), []string{exec.RuntimeContainerd, exec.RuntimeHooks}) || desc.GetResources().GetNanoCpus() <= 0 || desc.GetHostname() == "" {
		t.Fatalf("node description %v", desc)
	}
}

// The dispatcher's list of managers, once it differs from the one the
// agent kept, is told to ManagersChanged (the node closes connections to
// addresses no manager has: docs/adr/0038), once.
func TestManagersChangedTellsTheDispatchersList(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	dead := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(closedPort(t))))
	cfg := testConfig(t.TempDir(), []string{dead, d.addr}, rt)
	var mu sync.Mutex
	var told [][]string
	cfg.ManagersChanged = func(addrs []string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, addrs)
	}
	startAgent(t, cfg)
	waitfor.Holds(t, 10*time.Second, "the dispatcher's list told", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(told) == 1 && slices.Equal(told[0], []string{d.addr}), fmt.Sprint(told)
	})
	d.loseLeader()
	waitfor.Holds(t, 10*time.Second, "a second session", d.sessionsReach(2))
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 {
		t.Fatalf("the same list told again by the next session: %v", told)
	}
}

func TestStatusLostWithRestartIsSentAgain(t *testing.T) {
	// The previous agent recorded FAILED but died before sending it; the
	// cluster still thinks the replica runs.
	d := newFakeDispatcher(t)
	dir := t.TempDir()
	cfg := testConfig(dir, []string{d.addr}, newFakeRuntime(exec.RuntimeContainerd))
	local := imageTask("t1")
	local.Status = &api.TaskStatus{State: failedSt, Reason: ReasonExitCode, ExitCode: 2}
	storeTasks(t, dir, local)
	cluster := imageTask("t1")
	cluster.Status = &api.TaskStatus{State: running}
	d.assign(cluster)

	startAgent(t, cfg)
	waitfor.Holds(t, 10*time.Second, "FAILED sent again", d.lastIs("t1", failedSt))
	if got := d.last("t1").GetExitCode(); got != 2 {
		t.Fatalf("exit code %d, want 2", got)
	}
}

// storeTasks writes tasks to the agent db under dir, as an earlier agent
// left them.
func storeTasks(t *testing.T, dir string, tasks ...*api.Task) {
	t.Helper()
	d, err := db.Open((&Config{Dir: dir}).dbPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if err := d.PutTask(task); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSharedManagerConnOutlivesSessions: with ManagerConn, every session
// runs over the connection the node shares with its own calls, and the
// agent never closes it, neither when a session breaks nor when it
// stops; it does not dial a manager of its own.
func TestSharedManagerConnOutlivesSessions(t *testing.T) {
	d := newFakeDispatcher(t)
	conn, err := dialInsecure(context.Background(), d.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var asked atomic.Int32
	cfg := testConfig(t.TempDir(), []string{d.addr}, newFakeRuntime(exec.RuntimeContainerd))
	cfg.Dial = func(context.Context, string) (*grpc.ClientConn, error) {
		t.Error("the agent dialled a manager of its own")
		return nil, errors.New("no dialling here")
	}
	cfg.ManagerConn = func(addr string) (*grpc.ClientConn, error) {
		if addr != d.addr {
			t.Errorf("asked for %s, want %s", addr, d.addr)
		}
		asked.Add(1)
		return conn, nil
	}
	r := startAgent(t, cfg)
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	d.loseLeader()
	waitfor.Holds(t, 10*time.Second, "a second session", d.sessionsReach(2))
	r.stop(t)
	if n := asked.Load(); n < 2 {
		t.Errorf("ManagerConn asked %d times, want once per session (2)", n)
	}
	if s := conn.GetState(); s == connectivity.Shutdown {
		t.Fatal("the agent closed the shared connection")
	}
}
