package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// drainEntry is the drain part of `jaco node inspect`.
type drainEntry struct {
	Availability string `json:"availability"`
	Drain        *struct {
		State   string   `json:"state"`
		Moved   uint32   `json:"moved"`
		Total   uint32   `json:"total"`
		Message string   `json:"message"`
		Stuck   []string `json:"stuck_task_ids"`
	} `json:"drain"`
}

func (d *daemon) drainOf(node string) (drainEntry, error) {
	return decode[drainEntry](d.jaco("node", "inspect", node))
}

// healthyReplicas counts the replicas of service that run (healthy), by node.
func (d *daemon) healthyReplicas(service string) (int, map[string]int, error) {
	rs, err := d.replicas(service)
	if err != nil {
		return 0, nil, err
	}
	n, perNode := 0, map[string]int{}
	for _, r := range rs {
		if r.State == "running" {
			n++
			perNode[r.Node]++
		}
	}
	return n, perNode, nil
}

// healthyService creates a replicated hook service whose health check
// passes once $OUT/ready exists (made here) and waits for all its replicas.
func healthyService(t testing.TB, m *daemon, name string, replicas int, extra ...string) (out string) {
	t.Helper()
	out = t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := writeBundle(t, out, "exec sleep 3600")
	args := append([]string{"service", "create", "-d", "--name", name, "--replicas", fmt.Sprint(replicas), "-e", "OUT=" + out,
		"--health-cmd", `test -f "$OUT/ready"`, "--health-interval", "200ms", "--bundle", bundle}, extra...)
	wantOK(t, m.jaco(args...))
	eventually(t, 60*time.Second, func() error { _, err := m.runningReplicas(name, replicas); return err })
	return out
}

// TestDrainRemoveKeepsEveryReplicaRunning: `jaco node remove` of a worker
// with replicas moves them start-first — sampled throughout, the service
// never has fewer healthy replicas than it wants — drops its global
// replica, and ends with the node gone.
func TestDrainRemoveKeepsEveryReplicaRunning(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	healthyService(t, m, "web", 6)
	probeOut := t.TempDir()
	wantOK(t, m.jaco("service", "create", "-d", "--name", "probe", "--mode", "global", "-e", "OUT="+probeOut,
		"--bundle", writeBundle(t, probeOut, "exec sleep 3600")))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("probe", 2); return err })
	_, perNode, err := m.healthyReplicas("web")
	if err != nil || perNode["w1"] == 0 {
		t.Fatalf("web on %v (%v), want replicas on w1 to drain", perNode, err)
	}

	var fewestSeen string
	count := func() (int, error) {
		n, per, err := m.healthyReplicas("web")
		if err == nil && n < 6 && fewestSeen == "" {
			fewestSeen = fmt.Sprint(per)
		}
		return n, err
	}
	var r result
	fewest, samples := fewestDuring(count, func() { r = wantOK(t, m.jaco("node", "remove", "w1")) })
	if fewest < 6 {
		t.Errorf("during the drain web had only %d running replicas (%s) in one of %d samples", fewest, fewestSeen, samples)
	}
	t.Logf("%d samples during the drain; node remove printed:\n%s%s", samples, r.stderr, r.stdout)
	k := perNode["w1"] + 1 // and probe's
	if !strings.Contains(r.stderr, fmt.Sprintf("drained: %d/%d moved", k, k)) || r.stdout != "Node w1 removed.\n" {
		t.Errorf("node remove output lacks the progress to all moved (stderr) and the removal (stdout):\n%s%s", r.stderr, r.stdout)
	}
	nodes, err := m.tryNodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Hostname == "w1" {
			t.Fatalf("w1 still listed after node remove: %+v", nodes)
		}
	}
	n, perNode, err := m.healthyReplicas("web")
	if err != nil || n != 6 || perNode["w2"] != 6 {
		t.Fatalf("after the drain web runs %v (%v), want 6 on w2", perNode, err)
	}
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("probe", 1); return err })
}

// TestDrainPinnedRefusedUnlessForced: a node hosting a replica pinned to
// it refuses to drain, naming the replica, and drains with --force, the
// pinned replica stopped and left waiting for its node.
func TestDrainPinnedRefusedUnlessForced(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	healthyService(t, m, "db", 1, "--pin", "w1")
	run, err := m.runningReplicas("db", 1)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for id = range run {
	}
	r := m.jaco("node", "update", "--availability", "drain", "w1")
	wantError(t, r, 1, "node_hosts_pinned_replicas")
	if !strings.Contains(r.stderr, "node hosts pinned replicas: ["+id+"]") {
		t.Errorf("refusal does not name the pinned replica %s:\n%s", id, r.stderr)
	}
	if d, err := m.drainOf("w1"); err != nil || d.Availability != "active" || d.Drain != nil {
		t.Fatalf("refused drain changed w1: %+v (%v)", d, err)
	}
	wantError(t, m.jaco("node", "remove", "w1"), 1, "node_hosts_pinned_replicas")

	wantOK(t, m.jaco("node", "update", "--availability", "drain", "--force", "w1"))
	eventually(t, 30*time.Second, func() error {
		d, err := m.drainOf("w1")
		if err != nil {
			return err
		}
		if d.Drain == nil || d.Drain.State != "drained" || d.Drain.Moved != 1 || d.Drain.Total != 1 {
			return fmt.Errorf("w1 drain %+v, want drained 1/1", d.Drain)
		}
		return nil
	})
	rs, err := m.replicas("db")
	if err != nil || len(rs) != 1 || rs[0].ID == id || !strings.HasPrefix(rs[0].State, "pending") {
		t.Fatalf("db after a forced drain: %+v (%v); want one new replica pending for its node", rs, err)
	}
}

// TestDrainTimeout: a replacement that never becomes healthy stops the
// drain after --drain-timeout: node remove fails with drain_timeout, the
// node shows which replica is stuck, and the old replica keeps running.
func TestDrainTimeout(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "w2"))
	// Healthy on w1 only.
	wantOK(t, m.jaco("service", "create", "-d", "--name", "picky", "--replicas", "1", "-e", "OUT="+out,
		"--health-cmd", `test "$JACO_NODE_NAME" = w1`, "--health-interval", "200ms", "--bundle", bundle))
	run := map[string]replica{}
	eventually(t, 60*time.Second, func() (err error) { run, err = m.runningReplicas("picky", 1); return err })
	var old string
	for old = range run {
	}
	wantOK(t, m.jaco("node", "update", "--availability", "active", "w2"))

	start := time.Now()
	r := m.jaco("node", "remove", "--drain-timeout", "3s", "w1")
	// Progress lines, then the error.
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || r.stdout != "" || !strings.HasPrefix(lines[len(lines)-1], "error: drain_timeout: w1: picky.1 ") {
		t.Fatalf("node remove of a node whose replacement never gets healthy: %v\nstdout %q\nstderr %q\nwant a failure ending in drain_timeout naming picky.1",
			r.err(), r.stdout, r.stderr)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("drain timed out after %v, before its 3s", took)
	}
	d, err := m.drainOf("w1")
	if err != nil || d.Drain == nil || d.Drain.State != "timed_out" || len(d.Drain.Stuck) != 1 ||
		!strings.HasPrefix(d.Drain.Message, "pending: drain_timeout: picky.1") {
		t.Fatalf("w1 after the timeout: %+v (%v); want timed_out, one stuck task, pending: drain_timeout", d.Drain, err)
	}
	if st := wantOK(t, m.jaco("status")).stdout; !strings.Contains(lineWith(st, "w1"), "pending: drain_timeout: picky.1") {
		t.Errorf("jaco status does not show w1's drain timeout with the replica:\n%s", st)
	}
	n, perNode, err := m.healthyReplicas("picky")
	if err != nil || n != 1 || perNode["w1"] != 1 {
		t.Fatalf("picky runs %v (%v); want the old replica still running on w1", perNode, err)
	}
	if rs, _ := m.replicas("picky"); !hasReplica(rs, old, "running") {
		t.Fatalf("old replica %s not running any more: %+v", old, rs)
	}
}

func hasReplica(rs []replica, id, state string) bool {
	for _, r := range rs {
		if r.ID == id && r.State == state {
			return true
		}
	}
	return false
}
