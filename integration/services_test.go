package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// replica is one line of `jaco service ps --format json`.
type replica struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Node    string    `json:"node"`
	Desired string    `json:"desired"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
	Message string    `json:"message"`
}

func (r replica) String() string {
	return fmt.Sprintf("%s %s on %q desired %s state %q (%s)", r.Name, r.ID, r.Node, r.Desired, r.State, r.Message)
}

func (d *daemon) replicas(service string) ([]replica, error) {
	return decode[[]replica](d.jaco("service", "ps", service, "--format", "json"))
}

// runningReplicas returns the replicas of service that run, by id, or an error
// saying what the service looks like when there are not want of them.
func (d *daemon) runningReplicas(service string, want int) (map[string]replica, error) {
	rs, err := d.replicas(service)
	if err != nil {
		return nil, err
	}
	run := map[string]replica{}
	for _, r := range rs {
		if r.State == "running" {
			run[r.ID] = r
		}
	}
	if len(run) != want || len(rs) != want {
		return nil, fmt.Errorf("%s: %d running of %d listed, want %d: %+v", service, len(run), len(rs), want, rs)
	}
	return run, nil
}

// hookCluster is a manager that runs no replicas and two workers.
func hookCluster(t testing.TB) (m, w1, w2 *daemon) {
	m = startDaemon(t, "m", "--heartbeat-period", "500ms")
	w1, w2 = startDaemon(t, "w1"), startDaemon(t, "w2")
	m.initQuiet()
	for _, w := range []*daemon{w1, w2} {
		wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	}
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	waitReady(t, m, "w1", "w2")
	return m, w1, w2
}

// waitReady waits until m sees every named node ready (its agent holds a
// session): a service created before then is placed on the others only.
func waitReady(t testing.TB, m *daemon, names ...string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		return nodesIn(m.jaco("status", "--format", "json"), "ready", names...)
	})
}

// writeBundle writes a hook bundle whose launch records its environment
// and pid under out, then runs body.
func writeBundle(t testing.TB, out, body string) string {
	t.Helper()
	dir := t.TempDir()
	launch := `#!/bin/sh
echo "$JACO_SERVICE_NAME $JACO_SLOT $JACO_NODE_NAME $JACO_REPLICA_ID" > "$OUT/env.$JACO_REPLICA_ID"
echo $$ > "$OUT/pid.$JACO_REPLICA_ID"
echo "replica of $JACO_SERVICE_NAME in slot $JACO_SLOT says hello"
` + body + "\n"
	if err := os.WriteFile(filepath.Join(dir, "launch"), []byte(launch), 0o755); err != nil {
		t.Fatal(err)
	}
	// Replicas outlive jacod by design; the test's own must not outlive it.
	t.Cleanup(func() { killReplicas(out) })
	return dir
}

// killReplicas SIGKILLs the replicas that wrote pid files under out, and
// their hook shims first: a shim outliving its replica would write its
// exit record into a data dir the test is removing.
func killReplicas(out string) {
	pids, _ := filepath.Glob(filepath.Join(out, "pid.*"))
	for _, p := range pids {
		pid := replicaPid(out, strings.TrimPrefix(filepath.Base(p), "pid."))
		if pid <= 0 || !alive(pid) {
			continue
		}
		if shim := parentPid(pid); shim > 1 {
			_ = syscall.Kill(shim, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// parentPid reads pid's parent from /proc (0 when it cannot).
func parentPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces: the fields
	// after its closing parenthesis are state, then ppid.
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	fields := strings.Fields(rest)
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

func replicaPid(out, id string) int {
	data, err := os.ReadFile(filepath.Join(out, "pid."+id))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// TestHookService: a process service keeps its replicas running through a
// killed replica, an agent restart and a dead worker, and `service ps`
// says so at every step.
func TestHookService(t *testing.T) {
	t.Parallel()
	m, w1, w2 := hookCluster(t)
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--replicas", "4", "--restart-delay", "200ms",
		"-e", "OUT="+out, "--bundle", bundle))

	var run map[string]replica
	eventually(t, 30*time.Second, func() (err error) { run, err = m.runningReplicas("web", 4); return err })
	perNode := map[string]int{}
	for id, r := range run {
		perNode[r.Node]++
		env, err := os.ReadFile(filepath.Join(out, "env."+id))
		if err != nil {
			t.Fatalf("replica %s wrote no environment: %v", id, err)
		}
		slot := strings.TrimPrefix(r.Name, "web.")
		if want := fmt.Sprintf("web %s %s %s\n", slot, r.Node, id); string(env) != want {
			t.Errorf("replica environment %q, want %q", env, want)
		}
	}
	if perNode["w1"] != 2 || perNode["w2"] != 2 {
		t.Fatalf("replicas per node %v, want 2 on each worker", perNode)
	}
	// A worker keeps no cluster state; `jaco status` there shows what its
	// agent runs.
	type localStatus struct {
		Worker   bool `json:"worker"`
		Replicas []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"replicas"`
	}
	eventually(t, 10*time.Second, func() error {
		ls, err := decode[localStatus](w1.jaco("status", "--format", "json"))
		if err != nil {
			return err
		}
		var running []string
		for _, r := range ls.Replicas {
			if r.State == "running" {
				running = append(running, r.ID)
			}
		}
		if !ls.Worker || len(running) != 2 || run[running[0]].Node != "w1" || run[running[1]].Node != "w1" {
			return fmt.Errorf("jaco status on w1: %+v; want its 2 replicas running", ls)
		}
		return nil
	})
	// Logs stay on the workers; a manager fetches them.
	eventually(t, 10*time.Second, func() error {
		logs := wantOK(t, m.jaco("service", "logs", "web")).stdout
		for slot := 1; slot <= 4; slot++ {
			if line := fmt.Sprintf("replica of web in slot %d says hello", slot); !strings.Contains(logs, line) {
				return fmt.Errorf("service logs lack %q:\n%s", line, logs)
			}
		}
		return nil
	})

	t.Log("a killed replica is replaced in its slot")
	var victim replica
	for _, r := range run {
		victim = r
		break
	}
	if err := syscall.Kill(replicaPid(out, victim.ID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() (err error) {
		if run, err = m.runningReplicas("web", 4); err != nil {
			return err
		}
		if _, ok := run[victim.ID]; ok {
			return fmt.Errorf("killed replica %s still listed as running", victim.ID)
		}
		for _, r := range run {
			if r.Name == victim.Name {
				return nil
			}
		}
		return fmt.Errorf("no replica in slot %s", victim.Name)
	})

	t.Log("an agent restart adopts its replicas instead of restarting them")
	before := onNode(run, "w1")
	w1.restart()
	eventually(t, 30*time.Second, func() error {
		r, err := m.runningReplicas("web", 4)
		if err != nil {
			return err
		}
		if after := onNode(r, "w1"); !slices.Equal(after, before) {
			return fmt.Errorf("replicas on w1 %v after restart, want %v", after, before)
		}
		return nil
	})
	for _, id := range before {
		if !alive(replicaPid(out, id)) {
			t.Fatalf("replica %s's process died with the agent restart", id)
		}
	}

	t.Log("a dead worker's replicas come up on the other")
	lost := onNode(run, "w2")
	w2.kill()
	eventually(t, 30*time.Second, func() error {
		r, err := m.runningReplicas("web", 4)
		if err != nil {
			return err
		}
		if n := len(onNode(r, "w1")); n != 4 {
			return fmt.Errorf("%d replicas on w1, want all 4: %v", n, r)
		}
		return nil
	})
	t.Log("when it returns, its surplus replicas are stopped")
	w2.start()
	eventually(t, 30*time.Second, func() error {
		for _, id := range lost {
			if alive(replicaPid(out, id)) {
				return fmt.Errorf("replica %s still runs on the returned worker", id)
			}
		}
		_, err := m.runningReplicas("web", 4)
		return err
	})

	wantOK(t, m.jaco("service", "rm", "web"))
	eventually(t, 30*time.Second, func() error {
		for _, id := range onNode(run, "w1") {
			if alive(replicaPid(out, id)) {
				return fmt.Errorf("replica %s runs after service rm", id)
			}
		}
		return nil
	})
}

func onNode(run map[string]replica, node string) []string {
	var ids []string
	for id, r := range run {
		if r.Node == node {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestHookDependencyAndStopLadder: a dependent service waits for a healthy
// replica of its dependency, and a replica that ignores SIGINT and SIGQUIT
// is killed after both grace periods, with a logged failure to stop.
func TestHookDependencyAndStopLadder(t *testing.T) {
	t.Parallel()
	m, w1, w2 := hookCluster(t)
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "db", "--replicas", "1", "-e", "OUT="+out,
		"--health-cmd", `test -f "$OUT/ready"`, "--health-interval", "200ms", "--bundle", bundle))
	wantOK(t, m.jaco("service", "create", "-d", "--name", "app", "--replicas", "1", "--depends-on", "db",
		"-e", "OUT="+out, "--bundle", bundle))
	eventually(t, 30*time.Second, func() error {
		rs, err := m.replicas("app")
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].State != "pending: waiting_on_dependency" {
			return fmt.Errorf("app replicas %+v, want one pending: waiting_on_dependency", rs)
		}
		return nil
	})
	// db runs but is not healthy: it counts as starting, not running, until
	// its first check passes.
	eventually(t, 30*time.Second, func() error {
		rs, err := m.replicas("db")
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].State != "starting" || !alive(replicaPid(out, rs[0].ID)) {
			return fmt.Errorf("db replicas %+v, want one starting, its process alive", rs)
		}
		return nil
	})
	if _, err := m.runningReplicas("db", 1); err == nil {
		t.Fatal("db counts as running before its health check passes")
	}
	if err := os.WriteFile(filepath.Join(out, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("app", 1); return err })

	stubborn := writeBundle(t, out, `trap '' INT QUIT
while :; do sleep 0.1; done`)
	wantOK(t, m.jaco("service", "create", "-d", "--name", "stubborn", "--replicas", "1", "-e", "OUT="+out,
		"--stop-grace-period", "500ms", "--abort-grace-period", "500ms", "--bundle", stubborn))
	var run map[string]replica
	eventually(t, 30*time.Second, func() (err error) { run, err = m.runningReplicas("stubborn", 1); return err })
	var r replica
	for _, r = range run {
		break
	}
	pid := replicaPid(out, r.ID)
	start := time.Now()
	wantOK(t, m.jaco("service", "rm", "stubborn"))
	eventually(t, 20*time.Second, func() error {
		if alive(pid) {
			return fmt.Errorf("replica %d still runs", pid)
		}
		return nil
	})
	if took := time.Since(start); took < time.Second {
		t.Fatalf("replica ignoring SIGINT and SIGQUIT ended %v after rm, before both grace periods", took)
	}
	node := map[string]*daemon{"w1": w1, "w2": w2}[r.Node]
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(node.log(), "failed to stop in time") {
			return fmt.Errorf("%s's log does not report the failure to stop", r.Node)
		}
		return nil
	})
}

// TestHookGlobalService: a global service runs one replica on every
// eligible node, a node that joins gets its own, and a paused node none.
// A replica no node may take waits, saying why, until one may.
func TestHookGlobalService(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "probe", "--mode", "global", "-e", "OUT="+out, "--bundle", bundle))
	nodesOf := func(want int) ([]string, error) {
		run, err := m.runningReplicas("probe", want)
		if err != nil {
			return nil, err
		}
		var nodes []string
		for _, r := range run {
			nodes = append(nodes, r.Node)
		}
		slices.Sort(nodes)
		return nodes, nil
	}
	eventually(t, 30*time.Second, func() error {
		nodes, err := nodesOf(2)
		if err == nil && !slices.Equal(nodes, []string{"w1", "w2"}) {
			err = fmt.Errorf("global replicas on %v, want w1 and w2 (m is paused)", nodes)
		}
		return err
	})
	w3 := startDaemon(t, "w3")
	wantOK(t, w3.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	eventually(t, 30*time.Second, func() error {
		nodes, err := nodesOf(3)
		if err == nil && !slices.Equal(nodes, []string{"w1", "w2", "w3"}) {
			err = fmt.Errorf("global replicas on %v, want one on each worker", nodes)
		}
		return err
	})

	wantOK(t, m.jaco("service", "create", "-d", "--name", "zoned", "--constraint", "node.labels.zone==x",
		"-e", "OUT="+out, "--bundle", bundle))
	eventually(t, 30*time.Second, func() error {
		rs, err := m.replicas("zoned")
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].State != "pending: no_suitable_node" {
			return fmt.Errorf("zoned replicas %+v, want one pending: no_suitable_node", rs)
		}
		return nil
	})
	wantOK(t, m.jaco("node", "update", "--label-add", "zone=x", "w3"))
	eventually(t, 30*time.Second, func() error {
		run, err := m.runningReplicas("zoned", 1)
		if err == nil && len(onNode(run, "w3")) != 1 {
			err = fmt.Errorf("zoned runs on %v, want w3", run)
		}
		return err
	})
}
