package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// runStdin runs the CLI with stdin, as an operator pipes a key in.
func runStdin(stdin string, args ...string) result {
	return runWithStdin(jacoBin, nil, strings.NewReader(stdin), args...)
}

// clusterView is what an operator sees of a cluster, object by object.
type clusterView struct {
	Nodes    map[string]map[string]any // node ls --format json, by id
	Services map[string]map[string]any // service ls --format json, by id
	Inspect  map[string]string         // service inspect, by name
	Replicas map[string][]string       // replica ids by service name
}

func viewCluster(d *daemon) (clusterView, error) {
	v := clusterView{Nodes: map[string]map[string]any{}, Services: map[string]map[string]any{},
		Inspect: map[string]string{}, Replicas: map[string][]string{}}
	nodes, err := decode[[]map[string]any](d.jaco("node", "ls", "--format", "json"))
	if err != nil {
		return v, err
	}
	for _, n := range nodes {
		v.Nodes[n["id"].(string)] = n
	}
	services, err := decode[[]map[string]any](d.jaco("service", "ls", "--format", "json"))
	if err != nil {
		return v, err
	}
	for _, s := range services {
		v.Services[s["id"].(string)] = s
		name := s["name"].(string)
		r := d.jaco("service", "inspect", name)
		if err := r.err(); err != nil {
			return v, err
		}
		v.Inspect[name] = r.stdout
		rs, err := d.replicas(name)
		if err != nil {
			return v, err
		}
		for _, rep := range rs {
			v.Replicas[name] = append(v.Replicas[name], rep.ID+" "+rep.Name+" "+rep.Node+" "+rep.State)
		}
	}
	return v, nil
}

// diffViews names the first difference between two views, ignoring the
// raft id of node self, which the restore changes by design.
func diffViews(before, after clusterView, self string) error {
	for id, n := range after.Nodes {
		if id == self {
			n = clone(n)
			delete(n, "raft_id")
			after.Nodes[id] = n
		}
	}
	if b := before.Nodes[self]; b != nil {
		b = clone(b)
		delete(b, "raft_id")
		before.Nodes[self] = b
	}
	return firstDiff(
		viewPart{"nodes", before.Nodes, after.Nodes},
		viewPart{"services", before.Services, after.Services},
		viewPart{"service inspect", before.Inspect, after.Inspect},
		viewPart{"replicas", before.Replicas, after.Replicas},
	)
}

// viewPart is one part of what an operator sees, before and after.
type viewPart struct {
	name      string
	was, isnt any
}

// firstDiff names the first part that differs, or returns nil.
func firstDiff(parts ...viewPart) error {
	for _, part := range parts {
		if !reflect.DeepEqual(part.was, part.isnt) {
			was, _ := json.MarshalIndent(part.was, "", " ")
			is, _ := json.MarshalIndent(part.isnt, "", " ")
			return fmt.Errorf("%s differ:\nbefore %s\nafter  %s", part.name, was, is)
		}
	}
	return nil
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestBackupRestoreRoundTrip: a backup restored onto a fresh data dir
// serves every object as it was, with the old operator token; a new
// manager joins it and the cluster keeps taking writes.
func TestBackupRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m", "--heartbeat-period", "500ms")
	w := startDaemon(t, "w1", "--heartbeat-period", "500ms")
	opToken := m.initQuiet()
	wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	wantOK(t, m.jaco("node", "update", "--label-add", "zone=blue", "w1"))
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--replicas", "2", "-e", "OUT="+out, "--bundle", bundle))
	wantOK(t, m.jaco("service", "create", "-d", "--name", "idle", "--replicas", "0", "--bundle", bundle))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("web", 2); return err })

	oldToken := m.joinToken("worker") // issued before the backup, redeemed after the restore
	file := filepath.Join(t.TempDir(), "cluster.backup")
	r := wantOK(t, m.jaco("backup", "-o", file, "--quiet"))
	key := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(key, "JBK1-") {
		t.Fatalf("backup --quiet printed %q, want the backup key", r.stdout)
	}
	sealed, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{"PRIVATE KEY", "zone", "blue", "sleep 3600"} {
		if strings.Contains(string(sealed), clear) {
			t.Errorf("backup file holds %q in clear", clear)
		}
	}
	if r := m.jaco("backup", "-o", file); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("backup over an existing file: exit %d, %q", r.code, r.stderr)
	}

	var before clusterView
	eventually(t, 10*time.Second, func() (err error) { before, err = viewCluster(m); return err })
	var selfID string
	for id, n := range before.Nodes {
		if n["hostname"] == "m" {
			selfID = id
		}
	}
	if len(before.Nodes) != 2 || len(before.Services) != 2 || len(before.Replicas["web"]) != 2 || selfID == "" {
		t.Fatalf("cluster before the backup is not what the test built: %+v", before)
	}
	m.stop()

	t.Log("restore refuses a wrong key, a damaged file and a used data dir, writing nothing")
	dir := filepath.Join(t.TempDir(), "restored")
	restore := func(stdin, file, dataDir string) result {
		return runStdin(stdin, "restore", file, "--data-dir", dataDir, "--node-name", "m", "--advertise-addr", m.addr)
	}
	damaged := filepath.Join(t.TempDir(), "damaged")
	if err := os.WriteFile(damaged, sealed[:len(sealed)-10], 0o600); err != nil {
		t.Fatal(err)
	}
	otherKey := "JBK1-" + strings.Repeat("A", 43)
	for _, tc := range []struct {
		name, stdin, file, want string
	}{
		{"wrong key", otherKey, file, "does not open"},
		{"no key", "", file, "no backup key"},
		{"damaged file", key, damaged, "corrupted or truncated"},
	} {
		r := restore(tc.stdin, tc.file, dir)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", tc.name, r.code, r.stderr, tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%s: a refused restore left %s behind", tc.name, dir)
		}
	}
	if r := restore(key, file, m.dir); r.code != 1 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("restore into the old data dir: exit %d, %q", r.code, r.stderr)
	}

	t.Log("restore onto a fresh data dir at the old manager's address")
	wantOK(t, restore(key+"\n", file, dir))
	m2 := startDaemonAt(t, "m", dir, m.addr, m.flags...)

	eventually(t, 30*time.Second, func() error {
		after, err := viewCluster(m2)
		if err != nil {
			return err
		}
		return diffViews(before, after, selfID)
	})
	after, err := viewCluster(m2)
	if err != nil {
		t.Fatal(err)
	}
	if after.Nodes[selfID]["raft_id"] == before.Nodes[selfID]["raft_id"] {
		t.Errorf("restored manager kept the old raft id %v", after.Nodes[selfID]["raft_id"])
	}
	// The operator token of the old cluster still opens it, and a join
	// token issued before the backup still admits a worker.
	wantOK(t, m2.jacoTCP(opToken, "service", "ls"))
	w2 := startDaemon(t, "w2")
	wantOK(t, w2.jaco("node", "join", "--peer", m2.addr, "--token", oldToken))

	t.Log("a second manager joins the restored cluster, which keeps taking writes")
	m3 := startDaemon(t, "m3", "--heartbeat-period", "500ms")
	wantOK(t, m3.jaco("node", "join", "--peer", m2.addr, "--token", m2.joinToken("manager")))
	waitVoters(t, m3, 2, 1)
	wantOK(t, m3.jaco("service", "create", "-d", "--name", "after", "--replicas", "0", "--bundle", bundle))
	wantOK(t, m2.jaco("service", "inspect", "after"))
}

// TestRestoreOfAThreeManagerCluster: a backup taken through a follower
// restores to one manager; the old managers are out of raft and, once
// removed, their hosts come back empty under their old names and rejoin.
func TestRestoreOfAThreeManagerCluster(t *testing.T) {
	t.Parallel()
	ms := []*daemon{startDaemon(t, "m1"), startDaemon(t, "m2"), startDaemon(t, "m3")}
	ms[0].initQuiet()
	for _, d := range ms[1:] {
		wantOK(t, d.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("manager")))
	}
	waitVoters(t, ms[0], 3, 3)
	leader, followers := splitLeader(t, ms)
	bundle := writeBundle(t, t.TempDir(), "exec sleep 3600")
	wantOK(t, leader.jaco("service", "create", "-d", "--name", "kept", "--replicas", "0", "--bundle", bundle))
	file := filepath.Join(t.TempDir(), "cluster.backup")
	// Through a follower: the raftproxy forwards to the leader.
	key := strings.TrimSpace(wantOK(t, followers[0].jaco("backup", "-o", file, "-q")).stdout)
	for _, d := range ms {
		d.stop()
	}

	dir := filepath.Join(t.TempDir(), "restored")
	wantOK(t, runStdin(key, "restore", file, "--data-dir", dir, "--node-name", "m1", "--advertise-addr", ms[0].addr))
	r := startDaemonAt(t, "m1", dir, ms[0].addr)
	waitVoters(t, r, 1, 1)
	wantOK(t, r.jaco("service", "inspect", "kept"))

	// An old manager started on its old data dir is blacklisted: the
	// restored one tells it it was removed, and it never gets a vote.
	old := ms[1]
	old.start()
	eventually(t, 30*time.Second, func() error {
		if !strings.Contains(old.log(), "this one was removed from the cluster") {
			return fmt.Errorf("old manager m2 not told it was removed")
		}
		return nil
	})
	if st, err := r.tryStatus(); err != nil || len(st.Members) != 1 {
		t.Fatalf("restored cluster after the old manager came back: %+v, %v", st, err)
	}
	old.stop()

	for _, name := range []string{"m2", "m3"} {
		wantOK(t, r.jaco("node", "remove", name))
		fresh := startDaemon(t, name)
		wantOK(t, fresh.jaco("node", "join", "--peer", r.addr, "--token", r.joinToken("manager")))
	}
	waitVoters(t, r, 3, 3)
	wantOK(t, r.jaco("service", "create", "-d", "--name", "after", "--replicas", "0", "--bundle", bundle))
}
