package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// versionedBundle writes a hook bundle whose replicas record the value of
// $V (the spec version the test gave them) beside writeBundle's records.
func versionedBundle(t testing.TB, out, body string) string {
	return writeBundle(t, out, `echo "$V" > "$OUT/ver.$JACO_REPLICA_ID"`+"\n"+body)
}

// replicaVersion is the $V a replica recorded ("" before it started).
func replicaVersion(out, id string) string {
	data, _ := os.ReadFile(filepath.Join(out, "ver."+id))
	return strings.TrimSpace(string(data))
}

// updateStatus is the update_status `jaco service inspect` shows, its
// state as a lower-case word.
type updateStatus struct {
	State   string `json:"state"`
	Message string `json:"message"`
}

func (d *daemon) updateStatus(service string) (updateStatus, error) {
	v, err := decode[map[string]json.RawMessage](d.jaco("service", "inspect", service))
	if err != nil {
		return updateStatus{}, err
	}
	raw, ok := v["update_status"]
	if !ok {
		raw = v["updateStatus"]
	}
	var us updateStatus
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &us); err != nil {
			return us, fmt.Errorf("update status %s: %w", raw, err)
		}
	}
	us.State = strings.ToLower(strings.TrimPrefix(us.State, "UPDATE_STATE_"))
	return us, nil
}

// runningByVersion counts service's running replicas by the $V they
// recorded.
func (d *daemon) runningByVersion(service, out string) (map[string]int, []replica, error) {
	rs, err := d.replicas(service)
	if err != nil {
		return nil, nil, err
	}
	n := map[string]int{}
	var running []replica
	for _, r := range rs {
		if r.State == "running" && r.Desired == "running" {
			n[replicaVersion(out, r.ID)]++
			running = append(running, r)
		}
	}
	return n, running, nil
}

// TestBadUpdatePauses (docs/adr/0025-update-machine.md): a bundle whose
// launch fails at once pauses the update after its first replica, the old
// replicas keep running, the CLI says so and exits 1, and inspect shows
// why. Then `service rollback` brings the old spec back on every slot.
func TestBadUpdatePauses(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	good := versionedBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "--name", "web", "--replicas", "3", "-e", "OUT="+out, "-e", "V=1",
		"--update-monitor", "1s", "--bundle", good))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("web", 3); return err })

	bad := writeBundle(t, out, "echo 'cannot start: no config' >&2; exit 1")
	r := m.jaco("service", "update", "web", "--bundle", bad, "-e", "OUT="+out, "-e", "V=2")
	if r.code != 1 || !strings.Contains(r.stderr, "paused") || !strings.Contains(r.stderr, "web.") {
		t.Fatalf("bad update: exit %d, stderr %q; want exit 1 saying the update paused at a replica", r.code, r.stderr)
	}
	us, err := m.updateStatus("web")
	if err != nil || us.State != "paused" || !strings.Contains(us.Message, "failed") {
		t.Fatalf("update status %+v (%v), want paused naming the failure", us, err)
	}
	byVer, running, err := m.runningByVersion("web", out)
	if err != nil || byVer["1"] < 2 {
		t.Fatalf("running replicas by version %v (%v) after the pause, want 2 old ones still running: %v", byVer, err, running)
	}

	wantOK(t, m.jaco("service", "rollback", "web"))
	eventually(t, 30*time.Second, func() error {
		byVer, running, err := m.runningByVersion("web", out)
		if err != nil {
			return err
		}
		if byVer["1"] != 3 || len(running) != 3 {
			return fmt.Errorf("running by version %v, want 3 of the old spec: %v", byVer, running)
		}
		return nil
	})
	if us, err := m.updateStatus("web"); err != nil || us.State != "rollback_completed" {
		t.Fatalf("update status %+v (%v) after rollback, want rollback_completed", us, err)
	}
}

// TestUpdateFailureActionRollback: with --update-failure-action rollback a
// failing update returns every replica to the previous spec by itself.
func TestUpdateFailureActionRollback(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	good := versionedBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "--name", "web", "--replicas", "3", "-e", "OUT="+out, "-e", "V=1",
		"--update-failure-action", "rollback", "--update-monitor", "1s", "--rollback-monitor", "1s", "--bundle", good))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("web", 3); return err })

	bad := versionedBundle(t, out, "sleep 0.2; exit 3")
	r := m.jaco("service", "update", "web", "--bundle", bad, "-e", "OUT="+out, "-e", "V=2")
	if r.code != 1 || !strings.Contains(r.stderr, "rolled back") {
		t.Fatalf("failing update with failure action rollback: exit %d, stderr %q; want exit 1 saying it rolled back", r.code, r.stderr)
	}
	eventually(t, 30*time.Second, func() error {
		byVer, running, err := m.runningByVersion("web", out)
		if err != nil {
			return err
		}
		if byVer["1"] != 3 || len(running) != 3 {
			return fmt.Errorf("running by version %v, want every replica back on the old spec: %v", byVer, running)
		}
		us, err := m.updateStatus("web")
		if err != nil || us.State != "rollback_completed" {
			return fmt.Errorf("update status %+v (%v), want rollback_completed", us, err)
		}
		return nil
	})
}

// TestStartFirstUpdate: start-first with parallelism 1 keeps at least the
// service's replica count running at every sample of the roll.
func TestStartFirstUpdate(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	bundle := versionedBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "--name", "web", "--replicas", "3", "-e", "OUT="+out, "-e", "V=1",
		"--update-order", "start-first", "--update-parallelism", "1", "--update-monitor", "500ms", "--bundle", bundle))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("web", 3); return err })

	wantOK(t, m.jaco("service", "update", "web", "--detach", "-e", "OUT="+out, "-e", "V=2"))
	samples := 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		byVer, running, err := m.runningByVersion("web", out)
		if err != nil {
			t.Fatal(err)
		}
		samples++
		if len(running) < 3 {
			t.Fatalf("sample %d: %d replicas running (%v), want at least 3 throughout a start-first update", samples, len(running), byVer)
		}
		if us, err := m.updateStatus("web"); err == nil && us.State == "completed" {
			if byVer["2"] != 3 {
				t.Fatalf("update completed with running versions %v, want 3 of the new spec", byVer)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("update not completed within a minute; running %v", byVer)
		}
	}
	t.Logf("%d samples of the roll", samples)
}

// TestUpdateParallelismAndDelay: parallelism 2 with a 1 s delay replaces
// the replicas in pairs, each pair starting at least 1 s after the
// previous one ran (read from the replicas' own times).
func TestUpdateParallelismAndDelay(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	bundle := versionedBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "--name", "web", "--replicas", "4", "-e", "OUT="+out, "-e", "V=1",
		"--update-parallelism", "2", "--update-delay", "1s", "--update-monitor", "0s", "--bundle", bundle))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("web", 4); return err })

	wantOK(t, m.jaco("service", "update", "web", "-e", "OUT="+out, "-e", "V=2"))
	byVer, running, err := m.runningByVersion("web", out)
	if err != nil || byVer["2"] != 4 {
		t.Fatalf("after the update: running by version %v (%v), want 4 new", byVer, err)
	}
	// Each new replica's start: when its launch recorded its version.
	var starts []time.Time
	for _, r := range running {
		fi, err := os.Stat(filepath.Join(out, "ver."+r.ID))
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, fi.ModTime())
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if gap := starts[2].Sub(starts[1]); gap < time.Second {
		t.Errorf("second pair started %v after the first, want at least the 1s delay (starts %v)", gap, starts)
	}
	if within := starts[1].Sub(starts[0]); within > 900*time.Millisecond {
		t.Errorf("the first pair started %v apart, want together", within)
	}
}

// TestUpdateSurvivesLeaderKill: the leader killed mid-update, the new
// leader completes it and no slot is replaced twice.
func TestUpdateSurvivesLeaderKill(t *testing.T) {
	t.Parallel()
	ms := formManagers(t, 3)
	for _, m := range ms {
		wantOK(t, ms[0].jaco("node", "update", "--availability", "pause", m.name))
	}
	w := startDaemon(t, "w")
	wantOK(t, w.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("worker")))
	out := t.TempDir()
	bundle := versionedBundle(t, out, "exec sleep 3600")
	wantOK(t, ms[0].jaco("service", "create", "--name", "web", "--replicas", "4", "-e", "OUT="+out, "-e", "V=1",
		"--update-monitor", "1s", "--bundle", bundle))
	eventually(t, 30*time.Second, func() error { _, err := ms[0].runningReplicas("web", 4); return err })

	wantOK(t, ms[0].jaco("service", "update", "web", "--detach", "-e", "OUT="+out, "-e", "V=2"))
	eventually(t, 30*time.Second, func() error {
		if byVer, _, err := ms[0].runningByVersion("web", out); err != nil || byVer["2"] < 1 {
			return fmt.Errorf("no new replica yet: %v (%v)", byVer, err)
		}
		return nil
	})
	leader, rest := splitLeader(t, ms)
	t.Logf("killing the leader, %s, mid-update", leader.name)
	leader.kill()
	eventually(t, 90*time.Second, func() error {
		us, err := rest[0].updateStatus("web")
		if err != nil || us.State != "completed" {
			return fmt.Errorf("update status %+v (%v)", us, err)
		}
		return nil
	})
	byVer, running, err := rest[0].runningByVersion("web", out)
	if err != nil || byVer["2"] != 4 || len(running) != 4 {
		t.Fatalf("after the update: running by version %v (%v), want 4 of the new spec", byVer, err)
	}
	// Every replica of the new spec ever started wrote a ver file: one
	// per slot, unless one was replaced twice.
	perSlot := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(out, "ver.*"))
	for _, f := range files {
		id := strings.TrimPrefix(filepath.Base(f), "ver.")
		if replicaVersion(out, id) != "2" {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(out, "env."+id))
		fields := strings.Fields(string(env))
		if len(fields) > 1 {
			perSlot[fields[1]]++
		}
	}
	var twice []string
	for slot, n := range perSlot {
		if n != 1 {
			twice = append(twice, fmt.Sprintf("slot %s: %d", slot, n))
		}
	}
	slices.Sort(twice)
	if len(perSlot) != 4 || len(twice) > 0 {
		t.Fatalf("new-spec replicas per slot %v (%v), want exactly one in each of 4 slots", perSlot, twice)
	}
}
