package integration

import (
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestInitAndStatus walks a fresh daemon through `cluster init` and checks
// every view an operator uses to confirm the cluster exists: status as a
// table and as JSON, and the node list.
func TestInitAndStatus(t *testing.T) {
	t.Parallel()
	const name = "alpha"
	d := startDaemon(t, name)

	before := d.status()
	if before.State != "uninitialized" || before.ClusterID != "" || len(before.Members) != 0 {
		t.Fatalf("fresh daemon status %+v, want state uninitialized, no cluster, no members", before)
	}

	// Before init only init, join and status are served; a refused call
	// must leave the data dir exactly as it was.
	files := listFiles(t, d.dir)
	wantError(t, d.jaco("node", "ls"), 1, "cluster_uninitialized")
	if after := listFiles(t, d.dir); !reflect.DeepEqual(after, files) {
		t.Errorf("refused node ls changed the data dir:\nbefore %v\nafter  %v", files, after)
	}
	if s := d.status(); s.State != "uninitialized" {
		t.Errorf("after a refused node ls, state %q, want uninitialized", s.State)
	}

	out := wantOK(t, d.jaco("cluster", "init")).stdout
	if tokens := tokenPattern.FindAllString(out, -1); len(tokens) != 1 {
		t.Errorf("cluster init printed %d operator tokens, want 1:\n%s", len(tokens), out)
	}
	m := regexp.MustCompile(`Cluster (\S+) initialized`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cluster init did not name the cluster:\n%s", out)
	}
	clusterID := m[1]

	// init returns once the node leads its cluster: no waiting needed.
	s := d.status()
	if s.State != "ready" || s.ClusterID != clusterID || s.NodeID == "" || s.Leader != s.NodeID {
		t.Fatalf("status after init: %+v; want ready, cluster %s, this node leader", s, clusterID)
	}
	if len(s.Members) != 1 {
		t.Fatalf("status after init lists %d members, want 1: %+v", len(s.Members), s.Members)
	}
	if mb := s.Members[0]; mb.NodeID != s.NodeID || mb.Hostname != name || mb.Address != d.addr ||
		mb.RaftID == "" || mb.Status != "READY" || mb.Suffrage != "VOTER" || !mb.Leader {
		t.Errorf("member %+v; want node %s named %s at %s, READY, VOTER, leader", mb, s.NodeID, name, d.addr)
	}

	table := wantOK(t, d.jaco("cluster", "status")).stdout
	row := lineWith(table, d.addr) // the member's row; other lines name the node id too
	if !strings.Contains(table, "State:       ready") || !strings.Contains(table, clusterID) ||
		!strings.Contains(row, "[READY, VOTER]") || !strings.HasSuffix(strings.TrimSpace(row), "leader") {
		t.Errorf("status table does not show state ready, the cluster id and a [READY, VOTER] leader row:\n%s", table)
	}

	nodes, err := d.tryNodes()
	if err != nil {
		t.Fatal(err)
	}
	want := []nodeEntry{{ID: s.NodeID, Hostname: name, Role: "manager", Address: d.addr, RaftID: s.Members[0].RaftID}}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("node ls after init: %+v, want %+v", nodes, want)
	}

	// A second init must not make a new cluster over the old one.
	wantError(t, d.jaco("cluster", "init"), 1, "already_initialized")
	if again := d.status(); again.ClusterID != clusterID {
		t.Errorf("after a second init the cluster id is %q, want %q unchanged", again.ClusterID, clusterID)
	}
}

// fileInfo is what listFiles records of a file to notice any change.
type fileInfo struct {
	Mode    fs.FileMode
	Size    int64
	ModTime int64
}

// listFiles maps every path under dir to its mode, size and mtime.
func listFiles(t testing.TB, dir string) map[string]fileInfo {
	t.Helper()
	files := map[string]fileInfo{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = fileInfo{Mode: info.Mode(), Size: info.Size(), ModTime: info.ModTime().UnixNano()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lineWith returns the first line of text containing s, or "".
func lineWith(text, s string) string {
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// TestConcurrentInit runs several inits at once against one fresh daemon,
// as retrying automation might: exactly one may create the cluster, the
// others must be told it exists, and the one token printed must be the
// token of the cluster that stayed.
func TestConcurrentInit(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "racer")
	results := make([]result, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = d.jaco("cluster", "init", "--quiet") })
	}
	wg.Wait()

	var token string
	for _, r := range results {
		if r.code == 0 {
			if token != "" {
				t.Fatalf("two concurrent inits both succeeded: %q and %q", token, r.stdout)
			}
			token = strings.TrimSpace(r.stdout)
			continue
		}
		wantError(t, r, 1, "already_initialized")
	}
	if token == "" {
		t.Fatal("no concurrent init succeeded")
	}
	wantOK(t, d.jacoTCP(token, "node", "ls"))
}
