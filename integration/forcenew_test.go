package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestForceNewCluster: of five managers three are lost for good and a
// fourth is down. The leader's survivor, restarted with
// --force-new-cluster, leads alone with every committed write; the lost
// managers are removed, four fresh ones join, and the cluster of five
// voters takes writes. The flag left on changes nothing afterwards.
func TestForceNewCluster(t *testing.T) {
	t.Parallel()
	ds := formManagers(t, 5)
	bundle := writeBundle(t, t.TempDir(), "exec sleep 3600")
	for _, name := range []string{"alpha", "beta", "gamma"} {
		wantOK(t, ds[0].jaco("service", "create", "-d", "--name", name, "--replicas", "0", "--bundle", bundle, "-e", "WHO="+name))
	}
	// The leader holds every committed write; it is the survivor forced.
	survivor, rest := splitLeader(t, ds)
	before, err := viewCluster(survivor)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rest[:3] {
		d.kill() // lost for good
	}
	other := rest[3] // the second survivor: down for now, wiped later
	survivor.stop()
	other.kill()

	survivor.flags = append(survivor.flags, "--force-new-cluster")
	survivor.start()
	if !strings.Contains(survivor.log(), "sole voter of a new cluster") {
		t.Fatal("the forced start did not say what it did")
	}
	olds, _ := filepath.Glob(filepath.Join(survivor.dir, "raft.old-*"))
	if len(olds) != 1 {
		t.Fatalf("old raft state kept as %v, want one raft.old-* dir", olds)
	}
	waitVoters(t, survivor, 1, 1)

	after, err := viewCluster(survivor)
	if err != nil {
		t.Fatal(err)
	}
	if err := firstDiff(
		viewPart{"services", before.Services, after.Services},
		viewPart{"service inspect", before.Inspect, after.Inspect},
	); err != nil {
		t.Fatalf("changed by the force: %v", err)
	}
	wantOK(t, survivor.jaco("service", "create", "-d", "--name", "delta", "--replicas", "0", "--bundle", bundle))

	// The lost managers (and the down one, whose log is of the old
	// cluster) are removed; their raft ids are already blacklisted.
	for _, d := range rest {
		wantOK(t, survivor.jaco("node", "remove", "--force", d.name))
	}
	nodes, err := survivor.tryNodes()
	if err != nil || len(nodes) != 1 {
		t.Fatalf("after removing the lost managers: %v (%v), want only %s", nodes, err, survivor.name)
	}

	// The flag is dropped and the cluster grows back to five voters.
	survivor.flags = slices.DeleteFunc(survivor.flags, func(f string) bool { return f == "--force-new-cluster" })
	survivor.restart()
	waitVoters(t, survivor, 1, 1)
	fresh := []*daemon{survivor}
	for i := 6; i <= 9; i++ {
		name := fmt.Sprintf("m%d", i)
		d := startDaemon(t, name, "--node-name", name)
		wantOK(t, d.jaco("node", "join", "--peer", survivor.addr, "--token", survivor.joinToken("manager")))
		fresh = append(fresh, d)
	}
	for _, d := range fresh {
		waitVoters(t, d, 5, 5)
	}
	wantOK(t, fresh[4].jaco("service", "create", "-d", "--name", "epsilon", "--replicas", "0", "--bundle", bundle))

	// Left on by mistake, the flag is a no-op on a state already forced.
	survivor.flags = append(survivor.flags, "--force-new-cluster")
	survivor.restart()
	if !strings.Contains(survivor.log(), "nothing rewritten") {
		t.Error("a second start with the flag did not say it changed nothing")
	}
	olds, _ = filepath.Glob(filepath.Join(survivor.dir, "raft.old-*"))
	if len(olds) != 1 {
		t.Errorf("a second start with the flag rewrote the state again: %v", olds)
	}
	for _, d := range fresh {
		waitVoters(t, d, 5, 5)
	}
	// The old survivor brought back by mistake, with the old cluster's
	// log: its raft id is blacklisted, so it disturbs nothing.
	other.start()
	wantOK(t, survivor.jaco("service", "create", "-d", "--name", "zeta", "--replicas", "0", "--bundle", bundle))
	for _, d := range fresh {
		waitVoters(t, d, 5, 5)
	}
	if s, err := other.tryStatus(); err == nil && s.Leader != "" && slices.ContainsFunc(fresh, func(d *daemon) bool { return d.status().NodeID == s.Leader }) {
		t.Errorf("the blacklisted old survivor follows the new cluster's leader %s", s.Leader)
	}
	final, err := viewCluster(fresh[1])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range final.Services {
		names = append(names, s["name"].(string))
	}
	slices.Sort(names)
	if want := []string{"alpha", "beta", "delta", "epsilon", "gamma", "zeta"}; !slices.Equal(names, want) {
		t.Fatalf("services after the recovery: %v, want %v", names, want)
	}
	for name, was := range before.Inspect {
		if final.Inspect[name] != was {
			t.Errorf("service %s changed:\nbefore %s\nafter  %s", name, was, final.Inspect[name])
		}
	}
}
