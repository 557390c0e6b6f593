package integration

import (
	"encoding/json"
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

// The graces of TestMonitorsTellAPartitionFromADeath: long enough apart
// that a replacement at the wrong one shows.
const (
	testPartitionGrace = 8 * time.Second
	testDownGrace      = 2 * time.Second
)

// TestMonitorsTellAPartitionFromADeath: four hosts in network namespaces,
// a manager that runs nothing and three workers, one replica on each. A
// worker cut off from the manager but not from the other workers (its
// monitors) is partitioned: its replica keeps its slot, still running,
// shown `unknown: partitioned`, with no second copy anywhere, until the
// partition grace has passed; then it is replaced, and stopped once the
// worker is back. A worker cut off from everyone is down, and its
// replica is replaced after the (shorter) down grace; so is a partitioned
// worker's once its monitors stop hearing it too. The times are
// measured from the moment the network broke (JACO_DAYTWO_OUT: written
// there as JSON for docs/bench/day-two.md).
func TestMonitorsTellAPartitionFromADeath(t *testing.T) {
	t.Parallel()
	hub := newHub(t)
	m := hub.addHost(t).startJacod(t, "m", "--heartbeat-period", "500ms")
	m.initCluster(t)
	var ws []*nsDaemon
	for _, name := range []string{"w1", "w2", "w3"} {
		w := hub.addHost(t).startJacod(t, name)
		wantOK(t, w.join(m, m.joinToken(t, "worker")))
		ws = append(ws, w)
	}
	w1, w2, w3 := ws[0], ws[1], ws[2]
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	eventually(t, 30*time.Second, func() error { return nodesIn(m.jaco("status", "--format", "json"), "ready", "w1", "w2", "w3") })
	wantOK(t, m.jaco("cluster", "update", "--partition-grace", testPartitionGrace.String(), "--down-grace", testDownGrace.String()))

	out := t.TempDir()
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--replicas", "3", "-e", "OUT="+out,
		"--bundle", writeBundle(t, out, "exec sleep 3600")))
	// live is web's replicas desired running.
	live := func() ([]replica, error) {
		rs, err := decode[[]replica](m.jaco("service", "ps", "web", "--format", "json"))
		if err != nil {
			return nil, err
		}
		var out []replica
		for _, r := range rs {
			if r.Desired == "running" {
				out = append(out, r)
			}
		}
		return out, nil
	}
	find := func(rs []replica, id string) (replica, bool) {
		for _, r := range rs {
			if r.ID == id {
				return r, true
			}
		}
		return replica{}, false
	}
	// running waits for three running replicas, on nodes other than off.
	running := func(off string) error {
		rs, err := live()
		if err != nil {
			return err
		}
		n := 0
		for _, r := range rs {
			if r.State == "running" && r.Node != off {
				n++
			}
		}
		if n != 3 || len(rs) != 3 {
			return fmt.Errorf("want 3 replicas running off %q: %v", off, rs)
		}
		return nil
	}
	eventually(t, 60*time.Second, func() error {
		if err := running(""); err != nil {
			return err
		}
		rs, _ := live()
		for _, n := range []string{"w1", "w2", "w3"} {
			if !slices.ContainsFunc(rs, func(r replica) bool { return r.Node == n }) {
				return fmt.Errorf("none on %s: %v", n, rs)
			}
		}
		return nil
	})
	replicaOn := func(node string) replica {
		rs, err := live()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(rs, func(r replica) bool { return r.Node == node })
		if i < 0 {
			t.Fatalf("no replica on %s: %v", node, rs)
		}
		return rs[i]
	}
	pidOf := func(id string) int {
		b, err := os.ReadFile(filepath.Join(out, "pid."+id))
		if err != nil {
			t.Fatalf("pid of replica %s: %v", id, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	alive := func(pid int) bool { return syscall.Kill(pid, 0) == nil }
	w1Replica := replicaOn("w1")
	w1Pid := pidOf(w1Replica.ID)

	var got measurements
	// Partition: w1 loses the manager, not the other workers.
	broke := time.Now()
	w1.host.partition(t, m.host)
	eventually(t, 15*time.Second, func() error { return nodesIn(m.jaco("status", "--format", "json"), "partitioned", "w1") })
	got.PartitionNoticed = time.Since(broke)
	// Until the grace ends: w1's replica keeps its slot and runs, shown
	// unknown: partitioned, and no second copy of it exists.
	var replaced time.Duration
	eventually(t, testPartitionGrace+20*time.Second, func() error {
		rs, err := live()
		if err != nil {
			return err
		}
		if r, ok := find(rs, w1Replica.ID); ok {
			if time.Since(broke) < testPartitionGrace && (len(rs) != 3 || r.State != "unknown: partitioned") {
				t.Fatalf("within the partition grace web runs %v, want w1's replica kept, unknown: partitioned", rs)
			}
			if !alive(w1Pid) {
				t.Fatalf("w1's replica (pid %d) stopped during the partition", w1Pid)
			}
			return fmt.Errorf("w1's replica still holds its slot (%s)", r.State)
		}
		if len(rs) != 3 {
			return fmt.Errorf("replacement not placed yet: %v", rs)
		}
		replaced = time.Since(broke)
		return nil
	})
	if replaced < testPartitionGrace {
		t.Fatalf("w1's replica replaced %s after the partition, before the %s grace", replaced, testPartitionGrace)
	}
	eventually(t, 30*time.Second, func() error { return running("w1") })
	got.PartitionReplaced = replaced
	if !alive(w1Pid) {
		t.Fatal("w1's replica stopped while w1 was cut off: nothing could have told it")
	}
	w1.host.heal(t)
	eventually(t, 30*time.Second, func() error { return nodesIn(m.jaco("status", "--format", "json"), "ready", "w1") })
	eventually(t, 30*time.Second, func() error {
		if alive(w1Pid) {
			return fmt.Errorf("w1's replaced replica (pid %d) still runs after w1 came back", w1Pid)
		}
		return nil
	})

	// Death: w2 loses everyone; nobody hears it.
	w2Replica := replicaOn("w2")
	broke = time.Now()
	w2.host.partition(t, m.host, w1.host, w3.host)
	eventually(t, 15*time.Second, func() error { return nodesIn(m.jaco("status", "--format", "json"), "down", "w2") })
	got.DownNoticed = time.Since(broke)
	eventually(t, testDownGrace+20*time.Second, func() error {
		rs, err := live()
		if err != nil {
			return err
		}
		if r, ok := find(rs, w2Replica.ID); ok {
			return fmt.Errorf("w2's replica still holds its slot (%s)", r.State)
		}
		if len(rs) != 3 {
			return fmt.Errorf("replacement not placed yet: %v", rs)
		}
		got.DownReplaced = time.Since(broke)
		return nil
	})
	if got.DownReplaced-got.DownNoticed < testDownGrace-time.Second {
		t.Fatalf("w2's replica replaced %s after it was marked down, before the %s down grace", got.DownReplaced-got.DownNoticed, testDownGrace)
	}
	eventually(t, 30*time.Second, func() error { return running("w2") })
	// A partition, then silence: w3 cut off from the manager (its
	// monitors, w1 and the manager, w2 being down, tell it partitioned),
	// then from w1 too. The leader, asking again, marks it down, and its
	// replica goes after the down grace, not the partition grace.
	w3Replica := replicaOn("w3")
	w3.host.partition(t, m.host)
	eventually(t, 15*time.Second, func() error { return nodesIn(m.jaco("status", "--format", "json"), "partitioned", "w3") })
	marked := time.Now()
	w3.host.partition(t, m.host, w1.host)
	eventually(t, 15*time.Second, func() error { return nodesIn(m.jaco("status", "--format", "json"), "down", "w3") })
	eventually(t, testPartitionGrace+20*time.Second, func() error {
		rs, err := live()
		if err != nil {
			return err
		}
		if r, ok := find(rs, w3Replica.ID); ok {
			return fmt.Errorf("w3's replica still holds its slot (%s)", r.State)
		}
		return nil
	})
	if since := time.Since(marked); since >= testPartitionGrace {
		t.Fatalf("w3, partitioned then silent, had its replica replaced %s after it was marked partitioned: the partition grace, not the down grace", since)
	}
	got.SilentReplaced = time.Since(marked)
	eventually(t, 30*time.Second, func() error { return running("w3") })

	t.Logf("partition: noticed after %s, replaced after %s (grace %s); death: noticed after %s, replaced after %s (down grace %s); "+
		"partitioned then silent: replaced %s after it was marked partitioned",
		got.PartitionNoticed, got.PartitionReplaced, testPartitionGrace, got.DownNoticed, got.DownReplaced, testDownGrace, got.SilentReplaced)
	got.write(t)
}

// measurements are the times TestMonitorsTellAPartitionFromADeath
// measured, from the moment the network broke.
type measurements struct {
	PartitionNoticed  time.Duration `json:"partition_noticed_ns"`
	PartitionReplaced time.Duration `json:"partition_replaced_ns"`
	DownNoticed       time.Duration `json:"down_noticed_ns"`
	DownReplaced      time.Duration `json:"down_replaced_ns"`
	// SilentReplaced: a partitioned worker that its monitors stop hearing,
	// from its being marked partitioned to its replica's replacement.
	SilentReplaced time.Duration `json:"silent_replaced_ns"`
}

func (m measurements) write(t *testing.T) {
	path := os.Getenv("JACO_DAYTWO_OUT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := json.NewEncoder(f).Encode(m); err != nil {
		t.Fatal(err)
	}
}
