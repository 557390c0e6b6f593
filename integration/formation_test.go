package integration

// Formation without `jaco cluster init` (docs/adr/0013 and 0014):
// ordinal formation, identical flags on every replica as a StatefulSet
// runs them, and static formation from one --initial-cluster list. Real
// jacod processes in network namespaces (netns_test.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/internal/datadir"
)

const formationSecret = "c2VjcmV0LWZvci10aGUtZm9ybWF0aW9uLXRlc3Rz\n"

// secretFile writes a join secret into a 0600 file and returns its path.
func secretFile(t testing.TB, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "join-secret")
	if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ordinalSet is a StatefulSet's worth of hosts and daemons jaco-0..n-1,
// not started, every one with the same ordinal flags.
func ordinalSet(t testing.TB, c *mcluster, n int, secretPath string) []*nsDaemon {
	t.Helper()
	hs := make([]*host, n)
	addrs := make([]string, n)
	for i := range hs {
		hs[i] = c.hub.addHost(t)
		addrs[i] = hs[i].addr()
	}
	ds := make([]*nsDaemon, n)
	for i := range ds {
		ds[i] = hs[i].newJacod(t, fmt.Sprintf("jaco-%d", i),
			"--bootstrap", "--join-addr", strings.Join(addrs, ","), "--join-secret-file", secretPath)
	}
	return ds
}

// learnIDs records the node ids the daemons report (once initialized).
func (c *mcluster) learnIDs(t testing.TB, ds []*nsDaemon) {
	t.Helper()
	for _, d := range ds {
		eventually(t, convergeTimeout, func() error {
			s, err := d.tryStatus()
			if err != nil {
				return err
			}
			if s.State != "ready" || s.NodeID == "" {
				return fmt.Errorf("%s is %s", d.name, s.State)
			}
			c.ids[d] = s.NodeID
			return nil
		})
	}
}

// startFormed starts every one of ds, the managers of c, and waits until
// they report their node ids and agree on one cluster.
func (c *mcluster) startFormed(t testing.TB, ds []*nsDaemon) view {
	t.Helper()
	for _, d := range ds {
		d.start(t)
	}
	c.managers = ds
	c.learnIDs(t, ds)
	return c.waitConverged(t, ds)
}

// wipe kills d and empties its data dir, as a lost volume leaves it.
func (d *nsDaemon) wipe(t testing.TB) {
	t.Helper()
	d.kill(t)
	if err := os.RemoveAll(d.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d.dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// waitLogged waits until d's log since its latest start holds what.
func waitLogged(t testing.TB, d *nsDaemon, what string) {
	t.Helper()
	eventually(t, convergeTimeout, func() error {
		if !strings.Contains(d.logSince(), what) {
			return fmt.Errorf("%s has not logged %q yet", d.name, what)
		}
		return nil
	})
}

// TestOrdinalFormationAnyOrder: three replicas with identical ordinal
// flags, started 2, 1, 0 with gaps (the higher ordinals retry meanwhile),
// form one cluster of three voters; the operator token ordinal 0 left in
// its data dir works; the leader is killed and the cluster keeps
// committing.
func TestOrdinalFormationAnyOrder(t *testing.T) {
	t.Parallel()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	ds := ordinalSet(t, c, 3, secretFile(t, formationSecret))
	ds[2].start(t)
	waitLogged(t, ds[2], "formation not complete yet")
	ds[1].start(t)
	waitLogged(t, ds[1], "formation not complete yet")
	if s, err := ds[2].tryStatus(); err != nil || s.State != "uninitialized" {
		t.Fatalf("jaco-2 without ordinal 0: %+v (%v), want uninitialized", s, err)
	}
	ds[0].start(t)
	c.managers = ds
	c.learnIDs(t, ds)
	c.waitConverged(t, ds)
	for _, d := range ds {
		waitLogged(t, d, "formation complete")
	}
	if strings.Contains(ds[1].log()+ds[2].log(), "bootstraps") {
		t.Error("an ordinal other than 0 bootstrapped")
	}

	tokPath := datadir.Dir(ds[0].dir).OperatorToken()
	st, err := os.Stat(tokPath)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("operator token file: %v (%v), want mode 0600", st, err)
	}
	tok, _ := os.ReadFile(tokPath)
	wantOK(t, ds[0].jacoFrom(ds[1].host, strings.TrimSpace(string(tok)), "node", "ls"))

	c.killLeader(t)
}

// TestOrdinalZeroLosesDataDir: ordinal 0 of a formed cluster loses its data
// dir while 1 and 2 keep theirs. Started again with the same flags, it
// does not bootstrap a second cluster: the join addresses answer for the
// existing one, so it joins it under its name, its old member is removed,
// and the cluster is back to three voters with one node per name. Then the
// documented hazard: wiped again while cut off from 1 and 2, it does
// bootstrap a separate cluster; the runbook brings it back.
func TestOrdinalZeroLosesDataDir(t *testing.T) {
	t.Parallel()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	ds := ordinalSet(t, c, 3, secretFile(t, formationSecret))
	c.startFormed(t, ds)
	before, err := ds[1].tryStatus()
	if err != nil {
		t.Fatal(err)
	}
	oldID := c.ids[ds[0]]

	ds[0].wipe(t)
	ds[0].start(t)
	waitLogged(t, ds[0], "joined cluster with the join secret")
	delete(c.ids, ds[0])
	c.learnIDs(t, ds[:1])
	after, err := ds[0].tryStatus()
	if err != nil {
		t.Fatal(err)
	}
	if after.ClusterID != before.ClusterID {
		t.Fatalf("jaco-0 without its data dir is in cluster %s, the others in %s", after.ClusterID, before.ClusterID)
	}
	if c.ids[ds[0]] == oldID {
		t.Fatal("jaco-0 came back with its old node id from an empty data dir")
	}
	if strings.Contains(ds[0].logSince(), "bootstraps") {
		t.Error("jaco-0 bootstrapped although a cluster answered")
	}
	v := c.waitConverged(t, ds)
	if slices.ContainsFunc(v.nodes, func(n string) bool { return strings.HasPrefix(n, oldID+" ") }) {
		t.Errorf("the old jaco-0 (%s) is still listed: %q", oldID, v.nodes)
	}
	wantWritesThrough(t, ds)

	// The hazard the guard cannot see: with 1 and 2 out of its reach, an
	// empty ordinal 0 cannot tell a cluster exists and bootstraps a second
	// one of its own.
	ds[0].wipe(t)
	ds[0].host.partition(t, ds[1].host, ds[2].host)
	ds[0].start(t)
	waitLogged(t, ds[0], "ordinal 0 bootstraps")
	// The line above comes before the bootstrap; this one once it is done.
	waitLogged(t, ds[0], "cluster initialized")
	split, err := ds[0].tryStatus()
	if err != nil || split.ClusterID == "" || split.ClusterID == before.ClusterID {
		t.Fatalf("cut-off empty jaco-0: %+v (%v), want a cluster other than %s", split, err, before.ClusterID)
	}
	// The runbook (docs/operator-guide.md): stop it, wipe it, make the
	// others reachable, start it again: it rejoins the real cluster.
	ds[0].wipe(t)
	ds[0].host.heal(t)
	ds[0].start(t)
	waitLogged(t, ds[0], "joined cluster with the join secret")
	delete(c.ids, ds[0])
	c.learnIDs(t, ds[:1])
	if s, err := ds[0].tryStatus(); err != nil || s.ClusterID != before.ClusterID {
		t.Fatalf("jaco-0 after the runbook: %+v (%v), want cluster %s", s, err, before.ClusterID)
	}
	c.waitConverged(t, ds)
	wantWritesThrough(t, ds[:1])
}

// TestOrdinalWrongSecretRefused: a replica with another secret is refused
// with permission_denied on every attempt and nothing changes: it stays
// uninitialized and the cluster keeps its one member. Restarted with the
// right secret it joins (so the refusal was the secret's doing).
func TestOrdinalWrongSecretRefused(t *testing.T) {
	t.Parallel()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	good := secretFile(t, formationSecret)
	ds := ordinalSet(t, c, 2, good)
	ds[0].start(t)
	c.managers = ds[:1]
	c.learnIDs(t, ds[:1])
	c.waitConverged(t, ds[:1])

	wrong := ds[1]
	wrong.flags = slices.Clone(wrong.flags)
	wrong.flags[len(wrong.flags)-1] = secretFile(t, "another-secret-another-secret-another-secret\n")
	wrong.start(t)
	// Refused, and refused again on the retry.
	waitLogged(t, wrong, `attempt=2 err="`+ds[0].addr()+`: error: permission_denied: join secret`)
	waitLogged(t, ds[0], "formation join refused")
	if s, err := wrong.tryStatus(); err != nil || s.State != "uninitialized" {
		t.Fatalf("jaco-1 with the wrong secret: %+v (%v), want uninitialized", s, err)
	}
	c.waitConverged(t, ds[:1]) // still one member, one node

	wrong.stop(t)
	wrong.flags[len(wrong.flags)-1] = good
	wrong.start(t)
	c.managers = ds
	c.learnIDs(t, ds)
	c.waitConverged(t, ds)
}

// TestOrdinalAddressChange: a replica comes back on another address with
// its data dir (a rescheduled pod). Its join reconciler has the member's
// address rewritten — in raft and in the node list — instead of a second
// member being added, and it is a voter again at the new address.
func TestOrdinalAddressChange(t *testing.T) {
	t.Parallel()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	ds := ordinalSet(t, c, 3, secretFile(t, formationSecret))
	c.startFormed(t, ds)

	old := ds[2]
	old.stop(t)
	moved := c.hub.addHost(t).newJacod(t, old.name, old.flags...)
	moved.dir = old.dir
	moved.start(t)
	waitLogged(t, moved, "this member's address changed")
	c.ids[moved] = c.ids[old]
	delete(c.ids, old)
	c.managers = []*nsDaemon{ds[0], ds[1], moved}
	v := c.waitConverged(t, c.managers)
	for _, n := range v.nodes {
		if strings.Contains(n, old.addr()) {
			t.Errorf("node list still has the old address %s: %q", old.addr(), v.nodes)
		}
	}
	waitLogged(t, moved, "formation complete")
	wantWritesThrough(t, []*nsDaemon{moved})
}

// staticSet is three hosts and daemons started with the same
// --initial-cluster.
func staticSet(t testing.TB, c *mcluster, secretPath string) []*nsDaemon {
	t.Helper()
	names := []string{"alpha", "bravo", "charlie"}
	hs := make([]*host, len(names))
	var list []string
	for i, name := range names {
		hs[i] = c.hub.addHost(t)
		list = append(list, name+"="+hs[i].addr())
	}
	ds := make([]*nsDaemon, len(names))
	for i, name := range names {
		ds[i] = hs[i].newJacod(t, name, "--initial-cluster", strings.Join(list, ","),
			"--join-secret-file", secretPath, "--formation-delay", "1s")
	}
	return ds
}

// TestStaticFormation: three nodes started at once with the same
// --initial-cluster form one cluster of three voters and commit a write.
// A node with raft state refuses the flag (already_initialized) and
// leaves its data dir as it was; without the flag it rejoins.
func TestStaticFormation(t *testing.T) {
	t.Parallel()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	ds := staticSet(t, c, secretFile(t, formationSecret))
	v := c.startFormed(t, ds)
	if v.voters != 3 {
		t.Fatalf("%d voters, want 3: %q", v.voters, v.members)
	}
	wantWritesThrough(t, ds[:1])
	ids := map[string]bool{}
	for _, d := range ds {
		s, err := d.tryStatus()
		if err != nil {
			t.Fatal(err)
		}
		ids[s.ClusterID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("the nodes report clusters %v, want one", ids)
	}

	d := ds[2]
	d.stop(t)
	// The refused start takes the lock, which writes its pid into the
	// lock file; nothing else may change.
	lock, _ := filepath.Rel(d.dir, datadir.Dir(d.dir).Lock())
	beforeFiles := listFiles(t, d.dir)
	delete(beforeFiles, lock)
	args := append([]string{jacodBin, "--data-dir", d.dir, "--listen-addr", d.addr(), "--advertise-addr", d.addr(), "--node-name", d.name}, d.flags...)
	r := d.host.exec(nil, args...)
	if r.code == 0 || !strings.Contains(r.stderr, "error: already_initialized:") {
		t.Fatalf("jacod with --initial-cluster on a node with raft state: exit %d, stderr %q; want a refusal naming already_initialized", r.code, r.stderr)
	}
	after := listFiles(t, d.dir)
	delete(after, lock)
	if !reflect.DeepEqual(after, beforeFiles) {
		t.Fatalf("the refused start changed the data dir:\nbefore %v\nafter  %v", beforeFiles, after)
	}
	i := slices.Index(d.flags, "--initial-cluster")
	d.flags = slices.Delete(slices.Clone(d.flags), i, i+2)
	d.start(t)
	c.waitConverged(t, ds)
	wantWritesThrough(t, []*nsDaemon{d})
}
