package integration

// Multi-host tests of the recovery features (docs/design.md §13): autolock,
// backup and restore, and force-new-cluster, with real jacod processes each
// in a network namespace of its own (netns_test.go), as an operator runs
// them on separate machines. Every key is piped into the CLI on the machine
// that needs it; every wait is for a condition, with a deadline.

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/manager/encryption"
)

// memberStatus returns how d's cluster status shows the member called
// name ("READY", "UNREACHABLE", "UNSPECIFIED"), or an error when d does
// not list it.
func (d *nsDaemon) memberStatus(name string) (string, error) {
	s, err := d.tryStatus()
	if err != nil {
		return "", err
	}
	for _, m := range s.Members {
		if m.Hostname == name {
			return m.Status, nil
		}
	}
	return "", fmt.Errorf("%s does not list member %s: %+v", d.name, name, s.Members)
}

// nodeLabels returns the labels of every node d lists, by hostname;
// flags go to `jaco node ls`.
func (d *nsDaemon) nodeLabels(flags ...string) (map[string]map[string]string, error) {
	type labelled struct {
		Hostname string            `json:"hostname"`
		Labels   map[string]string `json:"labels"`
	}
	nodes, err := decode[[]labelled](d.jaco(append([]string{"node", "ls", "--format", "json"}, flags...)...))
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		out[n.Hostname] = n.Labels
	}
	return out, nil
}

// wantLabelEverywhere waits until every one of ds lists node host with
// label key=value.
func wantLabelEverywhere(t testing.TB, ds []*nsDaemon, host, key, value string) {
	t.Helper()
	for _, d := range ds {
		eventually(t, electionTimeout, func() error {
			labels, err := d.nodeLabels()
			if err != nil {
				return err
			}
			if got := labels[host][key]; got != value {
				return fmt.Errorf("%s shows label %s=%q on %s, want %q", d.name, key, got, host, value)
			}
			return nil
		})
	}
}

// TestMultihostAutolock: three managers on three hosts turn autolock on. A
// follower is stopped and the unlock key rotated while it is down. Back up,
// it is locked: its own status says so, its peers do not see it as up, and
// every other call on it answers locked. The new key does not open it (it
// was sealed before the rotation); the previous one, which `jaco cluster
// unlock-key` shows, does, once. Unlocked, it is a voter again, a write
// through it reaches the others, and after one more restart only the new
// key opens it. Finally the leader is killed and the two left, the
// unlocked one among them, keep committing.
func TestMultihostAutolock(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	leader := c.leader(t, c.managers)
	victim := c.others(leader)[0]
	peers := c.others(victim) // the leader and the other follower
	follower := c.others(leader, victim)[0]

	k1 := strings.TrimSpace(wantOK(t, leader.jaco("cluster", "update", "--autolock=true", "--quiet")).stdout)
	if _, err := encryption.ParseUnlockKey(k1); err != nil {
		t.Fatalf("cluster update --autolock=true --quiet printed %q: %v", k1, err)
	}
	// The key is the cluster's: every manager shows the same one.
	for _, d := range c.managers {
		eventually(t, electionTimeout, func() error {
			r := d.jaco("cluster", "unlock-key", "--quiet")
			if err := r.err(); err != nil {
				return err
			}
			if got := strings.TrimSpace(r.stdout); got != k1 {
				return fmt.Errorf("unlock-key on %s shows %q, want %q", d.name, got, k1)
			}
			return nil
		})
		waitKeysSealed(t, d.name, d.dir, k1)
	}
	wantOK(t, follower.jaco("node", "update", "--label-add", "era=autolock", leader.name))

	victim.stop(t)
	// Rotated through the other follower, which forwards to the leader.
	k2 := strings.TrimSpace(wantOK(t, follower.jaco("cluster", "unlock-key", "--rotate", "--quiet")).stdout)
	if _, err := encryption.ParseUnlockKey(k2); err != nil || k2 == k1 {
		t.Fatalf("unlock-key --rotate --quiet printed %q (%v); want a new key, not %q", k2, err, k1)
	}
	// What the operator reads to open the manager that was down.
	shown := wantOK(t, leader.jaco("cluster", "unlock-key")).stdout
	cur, prev, ok := strings.Cut(shown, "Previous key")
	if !ok || !strings.Contains(cur, k2) || !strings.Contains(prev, k1) {
		t.Fatalf("cluster unlock-key after a rotation shows %q; want the new key %s and then the previous %s", shown, k2, k1)
	}
	for _, d := range peers {
		waitKeysSealed(t, d.name, d.dir, k2)
	}
	wantOK(t, leader.jaco("node", "update", "--label-add", "era=while-down", victim.name))

	victim.start(t)
	if s, err := victim.tryStatus(); err != nil || s.State != "locked" {
		t.Fatalf("restarted %s: status %+v (%v), want state locked", victim.name, s, err)
	}
	// Its peers see it as down: the leader (which alone knows who answers)
	// as unreachable, the other peer at least not as ready.
	eventually(t, electionTimeout, func() error {
		l := c.leader(t, peers)
		for _, d := range peers {
			st, err := d.memberStatus(victim.name)
			switch {
			case err != nil:
				return err
			case d == l && st != "UNREACHABLE":
				return fmt.Errorf("leader %s shows locked %s as %s, want UNREACHABLE", d.name, victim.name, st)
			case st == "READY":
				return fmt.Errorf("%s shows locked %s as READY", d.name, victim.name)
			}
		}
		return nil
	})
	wantError(t, victim.jaco("node", "ls"), 1, "locked")
	wantError(t, victim.jaco("--timeout", "3s", "node", "issue-join-token", "--role", "worker"), 1, "locked")
	wantError(t, victim.jaco("service", "ls"), 1, "locked")

	// The new key does not open what was sealed before the rotation; the
	// refusal is counted and changes nothing.
	wantError(t, victim.unlock(k2), 1, "permission_denied")
	if s, err := victim.tryStatus(); err != nil || s.State != "locked" || s.FailedUnlockAttempts != 1 {
		t.Fatalf("after the new key was refused: %+v (%v); want locked, 1 failed attempt", s, err)
	}
	if r := wantOK(t, victim.unlock(k1)); !strings.Contains(r.stdout, "ready") {
		t.Fatalf("unlock with the previous key printed %q, want the ready state", r.stdout)
	}
	start := time.Now()
	c.waitConverged(t, c.managers) // three voters again, the unlocked one among them
	t.Logf("%s unlocked: a voter again, all agreeing, after %v", victim.name, time.Since(start).Round(time.Millisecond))
	wantLabelEverywhere(t, []*nsDaemon{victim}, victim.name, "era", "while-down")

	// A write through it is acknowledged and reaches the others.
	wantOK(t, victim.jaco("node", "update", "--label-add", "era=after-unlock", follower.name))
	wantLabelEverywhere(t, c.managers, follower.name, "era", "after-unlock")
	wantLabelEverywhere(t, c.managers, leader.name, "era", "autolock")

	// It re-sealed with the new key: the previous one opened it once.
	waitKeysSealed(t, victim.name, victim.dir, k2)
	victim.restart(t)
	wantError(t, victim.unlock(k1), 1, "permission_denied")
	wantOK(t, victim.unlock(k2))
	c.waitConverged(t, c.managers)

	// The cluster survives its leader with the unlocked manager voting.
	c.killLeader(t)
}

// nodeObject is what restore must keep of a node: who it is and what the
// operator set on it. Its state (ready, down) is the cluster's to find out.
type nodeObject struct {
	ID           string            `json:"id"`
	Hostname     string            `json:"hostname"`
	Role         string            `json:"role"`
	Address      string            `json:"address"`
	Availability string            `json:"availability"`
	Labels       map[string]string `json:"labels"`
}

// objects is what an operator sees of a cluster's objects through one
// manager: nodes by hostname, services by name (the service ls row and
// the service inspect text).
type objects struct {
	Nodes    map[string]nodeObject
	Services map[string]map[string]any
	Inspect  map[string]string
}

func (d *nsDaemon) objects() (objects, error) {
	o := objects{Nodes: map[string]nodeObject{}, Services: map[string]map[string]any{}, Inspect: map[string]string{}}
	nodes, err := decode[[]nodeObject](d.jaco("node", "ls", "--format", "json"))
	if err != nil {
		return o, err
	}
	for _, n := range nodes {
		o.Nodes[n.Hostname] = n
	}
	services, err := decode[[]map[string]any](d.jaco("service", "ls", "--format", "json"))
	if err != nil {
		return o, err
	}
	for _, s := range services {
		name, _ := s["name"].(string)
		o.Services[name] = s
		r := d.jaco("service", "inspect", name)
		if err := r.err(); err != nil {
			return o, err
		}
		o.Inspect[name] = r.stdout
	}
	return o, nil
}

// sameServices names the first difference of the services between two
// views of the objects, or returns nil.
func sameServices(before, after objects) error {
	return firstDiff(
		viewPart{"services", before.Services, after.Services},
		viewPart{"service inspect", before.Inspect, after.Inspect},
	)
}

// waitSoleLeader waits until d is ready, leads, and is the only member,
// a voter at its own address.
func waitSoleLeader(t testing.TB, d *nsDaemon) clusterStatus {
	t.Helper()
	var s clusterStatus
	eventually(t, electionTimeout, func() (err error) {
		if s, err = d.tryStatus(); err != nil {
			return err
		}
		if s.State != "ready" || s.Leader == "" || s.Leader != s.NodeID {
			return fmt.Errorf("%s: state %s, leader %q, itself %s; want ready and leading", d.name, s.State, s.Leader, s.NodeID)
		}
		if len(s.Members) != 1 || s.Members[0].Suffrage != "VOTER" || s.Members[0].Address != d.addr() {
			return fmt.Errorf("%s: members %+v; want itself alone, a voter at %s", d.name, s.Members, d.addr())
		}
		return nil
	})
	return s
}

// TestMultihostRestoreOnFreshHost: a backup of three managers and a worker,
// taken over TCP from an operator's host through a follower, restored on a
// brand-new host at a new address after every old node is gone. The
// restored manager elects itself and shows every object as it was, the
// operator token opens it from elsewhere, and a manager join token issued
// before the backup admits a fresh manager on another new host. With the
// old nodes removed the cluster grows to two managers (one voter) and
// three (three voters) and takes writes through each.
func TestMultihostRestoreOnFreshHost(t *testing.T) {
	t.Parallel()
	hb := newHub(t)
	c := &mcluster{hub: hb, ids: map[*nsDaemon]string{}}
	m1 := hb.addHost(t).startJacod(t, "m1")
	opToken := m1.initCluster(t)
	s, err := m1.tryStatus()
	if err != nil {
		t.Fatal(err)
	}
	c.managers, c.ids[m1] = []*nsDaemon{m1}, s.NodeID
	m2 := c.addManager(t, m1, m1)
	m3 := c.addManager(t, m2, m1)
	c.waitConverged(t, c.managers)
	w := hb.addHost(t).startJacod(t, "w1")
	wantOK(t, w.join(m3, m2.joinToken(t, "worker")))
	old := append(slices.Clone(c.managers), w)

	bundle := writeBundle(t, t.TempDir(), "exec sleep 3600")
	wantOK(t, m1.jaco("node", "update", "--label-add", "zone=blue", w.name))
	wantOK(t, m2.jaco("node", "update", "--label-add", "rack=r7", "--label-add", "tier=core", m1.name))
	wantOK(t, m3.jaco("node", "update", "--availability", "pause", m2.name))
	wantOK(t, m1.jaco("service", "create", "-d", "--name", "idle", "--replicas", "0", "--bundle", bundle,
		"-e", "WHO=idle", "--constraint", "node.labels.zone==blue"))
	wantOK(t, m3.jaco("service", "create", "-d", "--name", "spare", "--replicas", "0", "--bundle", bundle))
	// Issued before the backup, redeemed after the restore.
	joinTok := m2.joinToken(t, "manager")

	leader := c.leader(t, c.managers)
	ops := hb.addHost(t) // the operator's machine: no daemon, just the CLI
	file := filepath.Join(t.TempDir(), "cluster.backup")
	via := c.others(leader)[0]
	key := strings.TrimSpace(wantOK(t, via.jacoFrom(ops, opToken, "backup", "-o", file, "--quiet")).stdout)
	if !strings.HasPrefix(key, "JBK1-") || strings.ContainsAny(key, " \n") {
		t.Fatalf("backup --quiet through %s printed %q, want only the backup key", via.name, key)
	}
	// The backup holds everything acknowledged before it: what the leader
	// shows now.
	before, err := leader.objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Nodes) != 4 || len(before.Services) != 2 || before.Nodes["w1"].Labels["zone"] != "blue" ||
		before.Nodes["m1"].Labels["tier"] != "core" || before.Nodes["m2"].Availability != "pause" {
		t.Fatalf("the cluster before the backup is not what the test built: %+v", before)
	}
	for _, d := range old {
		d.stop(t)
	}

	// A machine the old cluster never knew, at a new address.
	nh := hb.addHost(t)
	r1 := nh.newJacod(t, "r1")
	res := wantOK(t, nh.execStdin(nil, key+"\n", jacoBin, "restore", file,
		"--data-dir", r1.dir, "--advertise-addr", r1.addr(), "--node-name", r1.name))
	if !strings.Contains(res.stdout, "sole manager") || !strings.Contains(res.stdout, r1.addr()) {
		t.Errorf("restore printed %q; want it to name this node the sole manager at %s", res.stdout, r1.addr())
	}
	start := time.Now()
	r1.start(t)
	st := waitSoleLeader(t, r1)
	t.Logf("restored %s on %s leads alone %v after its start", r1.name, r1.addr(), time.Since(start).Round(time.Millisecond))

	var after objects
	eventually(t, electionTimeout, func() (err error) {
		if after, err = r1.objects(); err != nil {
			return err
		}
		return sameServices(before, after)
	})
	for name, was := range before.Nodes {
		if is, ok := after.Nodes[name]; !ok || !reflect.DeepEqual(is, was) {
			t.Errorf("node %s after the restore: %+v (listed %v), want %+v as backed up", name, is, ok, was)
		}
	}
	if self := after.Nodes[r1.name]; len(after.Nodes) != 5 || self.ID != st.NodeID || self.Role != "manager" || self.Address != r1.addr() {
		t.Errorf("restored nodes %+v; want the four backed up and %s, a manager at %s", after.Nodes, r1.name, r1.addr())
	}
	// The old operator token opens the restored cluster from elsewhere.
	if r := wantOK(t, r1.jacoFrom(ops, opToken, "service", "inspect", "idle")); r.stdout != before.Inspect["idle"] {
		t.Errorf("service inspect over TCP after the restore:\n%s\nwant\n%s", r.stdout, before.Inspect["idle"])
	}

	// The old nodes are gone for good: remove them, then grow afresh.
	for _, d := range old {
		wantOK(t, r1.jaco("node", "remove", "--force", d.name))
	}
	nc := &mcluster{hub: hb, managers: []*nsDaemon{r1}, ids: map[*nsDaemon]string{r1: st.NodeID}}
	jh := hb.addHost(t)
	j1 := jh.startJacod(t, fmt.Sprintf("m%d", jh.n))
	nc.joined(t, j1, j1.join(r1, joinTok))
	v := nc.waitConverged(t, nc.managers)
	t.Logf("2 managers, %d voter(s)", v.voters)
	nc.addManager(t, j1, j1) // a token issued through j1, the join sent to it
	v = nc.waitConverged(t, nc.managers)
	t.Logf("3 managers, %d voters", v.voters)
	wantWritesThrough(t, nc.managers)

	newest := nc.managers[2]
	wantOK(t, newest.jaco("service", "create", "-d", "--name", "after", "--replicas", "0", "--bundle", bundle))
	for _, d := range nc.managers {
		eventually(t, electionTimeout, func() error {
			o, err := d.objects()
			if err != nil {
				return err
			}
			if _, ok := o.Services["after"]; !ok {
				return fmt.Errorf("%s does not list service after", d.name)
			}
			delete(o.Services, "after")
			delete(o.Inspect, "after")
			return sameServices(before, o)
		})
	}
}

// TestMultihostForceNewCluster: five managers on five hosts take writes,
// then three of them, the leader among them, are lost for good. The two
// survivors cannot elect a leader. One is stopped; the other, restarted
// with --force-new-cluster, leads alone with every write. The lost
// managers and the stopped survivor are removed, four fresh managers on
// new hosts join with tokens, five voters agree, every recorded write is
// on each of them, and writes are acknowledged through each.
func TestMultihostForceNewCluster(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 5)
	bundle := writeBundle(t, t.TempDir(), "exec sleep 3600")
	// A write through each manager (followers forward to the leader).
	for i, d := range c.managers {
		wantOK(t, d.jaco("service", "create", "-d", "--name", fmt.Sprintf("rec-%d", i+1), "--replicas", "0",
			"--bundle", bundle, "-e", "THROUGH="+d.name))
		wantOK(t, d.jaco("node", "update", "--label-add", "wrote=rec-"+fmt.Sprint(i+1), d.name))
	}
	leader := c.leader(t, c.managers)
	before, err := leader.objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Services) != len(c.managers) {
		t.Fatalf("leader lists services %v, want %d", slices.Sorted(maps.Keys(before.Services)), len(c.managers))
	}
	// Every manager has applied every write, so whichever survives holds
	// them all.
	for _, d := range c.managers {
		eventually(t, electionTimeout, func() error {
			o, err := d.objects()
			if err != nil {
				return err
			}
			return sameServices(before, o)
		})
	}

	others := c.others(leader)
	lost := []*nsDaemon{leader, others[0], others[1]}
	keep, down := others[2], others[3]
	for _, d := range lost {
		d.kill(t)
	}
	// Two of five voters: no leader, and writes are refused, not hung.
	wantLeaderless(t, []*nsDaemon{keep, down}, "survivor")

	down.stop(t)
	keep.flags = append(keep.flags, "--force-new-cluster")
	start := time.Now()
	keep.restart(t)
	if !strings.Contains(keep.logSince(), "sole voter of a new cluster") {
		t.Error("the forced start did not say what it did")
	}
	if olds, _ := filepath.Glob(filepath.Join(keep.dir, "raft.old-*")); len(olds) != 1 {
		t.Errorf("old raft state kept as %v, want one raft.old-* dir", olds)
	}
	waitSoleLeader(t, keep)
	wantWritesThrough(t, []*nsDaemon{keep})
	t.Logf("%s forced: leads alone and takes writes %v after its restart", keep.name, time.Since(start).Round(time.Millisecond))
	if o, err := keep.objects(); err != nil {
		t.Fatal(err)
	} else if err := sameServices(before, o); err != nil {
		t.Fatalf("the forced survivor lost writes: %v", err)
	}
	// The flag is one-shot: dropped for any later start.
	keep.flags = slices.DeleteFunc(keep.flags, func(f string) bool { return f == "--force-new-cluster" })

	for _, d := range append(slices.Clone(lost), down) {
		wantOK(t, keep.jaco("node", "remove", "--force", d.name))
	}
	if nodes, err := keep.tryNodes(); err != nil || len(nodes) != 1 {
		t.Fatalf("after removing the lost managers %s lists %+v (%v), want only itself", keep.name, nodes, err)
	}

	nc := &mcluster{hub: c.hub, managers: []*nsDaemon{keep}, ids: map[*nsDaemon]string{keep: c.ids[keep]}}
	grow := time.Now()
	for len(nc.managers) < 5 {
		// The newest manager issues the token; the join goes to keep.
		nc.addManager(t, nc.managers[len(nc.managers)-1], keep)
	}
	v := nc.waitConverged(t, nc.managers)
	t.Logf("grown back to 5 managers, %d voters, in %v", v.voters, time.Since(grow).Round(time.Millisecond))
	for _, d := range nc.managers {
		eventually(t, electionTimeout, func() error {
			o, err := d.objects()
			if err != nil {
				return err
			}
			if got, want := o.Nodes[keep.name].Labels, before.Nodes[keep.name].Labels; !reflect.DeepEqual(got, want) {
				return fmt.Errorf("%s lists %s with labels %v, want %v", d.name, keep.name, got, want)
			}
			return sameServices(before, o)
		})
	}
	wantWritesThrough(t, nc.managers)

	// The stopped survivor brought back by mistake on the old cluster's
	// state still knows keep's address, but its raft id is blacklisted:
	// it is told it was removed and disturbs nobody.
	lead := nc.leader(t, nc.managers)
	down.start(t)
	down.allowExit() // told it was removed, it may shut down by itself
	waitLogged(t, down, "says this one was removed from the cluster")
	if v := nc.waitConverged(t, nc.managers); v.status.Leader != nc.ids[lead] {
		t.Errorf("the old survivor's return moved leadership from %s to %s", lead.name, v.status.Leader)
	}
	if s, err := down.tryStatus(); err == nil && s.Leader != "" {
		t.Errorf("the blacklisted old survivor %s names leader %s", down.name, s.Leader)
	}
	wantWritesThrough(t, nc.managers)
}
