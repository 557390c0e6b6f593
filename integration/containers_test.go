package integration

// Multi-host tests with real containers (docs/design.md §8–§9): one
// manager and four workers in network namespaces, every node running its
// replicas under one private containerd (each in its own containerd
// namespace, CNI bridge and subnet, all derived from its node id). What
// runs is checked in containerd itself and over HTTP from another host,
// not only in what jaco says.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainers runs the cases in order on one cluster, since a cluster
// with containerd takes a while to make; each case removes its services
// unless the next one builds on them.
func TestContainers(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newContainerCluster(t, 4)
	t.Logf("cluster of %d workers with the image loaded after %v", len(c.workers), time.Since(start).Round(time.Millisecond))

	cases := []struct {
		name string
		run  func(t *testing.T, c *ccluster)
	}{
		{"published port answers on every replica's node", testWebReplicas},
		{"killed container is replaced", testKilledContainer},
		{"dead worker's replicas move and come back stopped", testDeadWorker},
		{"spread over zones", testSpreadZones},
		{"dependent waits for a healthy dependency", testDependency},
		{"stop ladder ends in SIGKILL", testStopLadder},
		{"agent restart adopts running containers", testAgentRestart},
		{"options and templates reach the containers", testContainerOptions},
		// Last: it takes a worker out of the cluster for good.
		{"node remove drains a worker start-first", testDrainWorker},
	}
	for _, tc := range cases {
		caseStart := time.Now()
		if !t.Run(tc.name, func(t *testing.T) { tc.run(t, c) }) {
			return // later cases build on earlier ones
		}
		t.Logf("%s: %v", tc.name, time.Since(caseStart).Round(time.Millisecond))
	}
}

// testWebReplicas: three replicas of a web server publishing 8080 in host
// mode run on three different workers (a host port is a node's to give once),
// and each answers on its node's address from another host.
func testWebReplicas(t *testing.T, c *ccluster) {
	c.createService(t, "web", []string{"--replicas", "3", "-p", "mode=host,published=8080,target=80"}, webCmd)
	reps := c.waitRunning(t, "web", 3, nil)
	nodes := map[string]bool{}
	for _, r := range reps {
		nodes[r.Node] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("3 replicas publishing 8080 on %d nodes: %v", len(nodes), reps)
	}
	c.wantServed(t, reps)
}

// wantServed requires every replica's node to answer on 8080 with the
// image's page, asked from the manager's host.
func (c *ccluster) wantServed(t testing.TB, reps []replica) {
	t.Helper()
	for _, r := range reps {
		d := c.byName(r.Node)
		if d == nil {
			t.Fatalf("replica %v on an unknown node", r)
		}
		addr := d.host.ip + ":8080"
		eventually(t, 20*time.Second, func() error {
			body, err := httpGet(c.manager.host, addr, "/")
			if err != nil {
				return fmt.Errorf("replica %s: %w", r.ID, err)
			}
			if body != indexPage {
				return fmt.Errorf("GET %s/ answered %q, want %q", addr, body, indexPage)
			}
			return nil
		})
	}
}

// testKilledContainer: a replica whose process is SIGKILLed from outside
// (as the OOM killer would) ends as failed and a new replica takes its
// place; the service is back to 3/3 and serving.
func testKilledContainer(t *testing.T, c *ccluster) {
	before := c.waitRunning(t, "web", 3, nil)
	victim := before[0]
	pid, err := c.runningPid(victim.Node, victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatalf("kill pid %d of replica %s: %v", pid, victim.ID, err)
	}
	killed := time.Now()
	after := c.waitRunning(t, "web", 3, func(r replica) error {
		if r.ID == victim.ID {
			return fmt.Errorf("killed replica %s still counted running", r.ID)
		}
		return nil
	})
	t.Logf("replica %s killed: 3/3 running again after %v", victim.ID, time.Since(killed).Round(time.Millisecond))
	hist, err := c.ps("web", true)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(hist, func(r replica) bool { return r.ID == victim.ID })
	if i < 0 || !strings.HasPrefix(hist[i].State, "failed") {
		t.Errorf("killed replica in ps --all: %v; want it failed", hist)
	}
	c.wantServed(t, after)
}

// testDeadWorker: SIGKILL a worker's jacod (its containers keep running,
// as on a host cut off from the cluster). The manager marks it down and
// the replicas it held run on the other workers. When it comes back, the
// containers of the replicas it lost are stopped.
func testDeadWorker(t *testing.T, c *ccluster) {
	before := c.waitRunning(t, "web", 3, nil)
	dead := c.byName(before[0].Node)
	var lost []string
	for _, r := range before {
		if r.Node == dead.name {
			lost = append(lost, r.ID)
		}
	}
	dead.kill(t)
	killed := time.Now()
	c.waitNodes(t, []*nsDaemon{dead}, "down")
	t.Logf("%s SIGKILLed: down after %v", dead.name, time.Since(killed).Round(time.Millisecond))
	after := c.waitRunning(t, "web", 3, func(r replica) error {
		if r.Node == dead.name {
			return fmt.Errorf("replica %s on dead %s", r.ID, dead.name)
		}
		return nil
	})
	t.Logf("%s SIGKILLed: 3/3 running elsewhere after %v", dead.name, time.Since(killed).Round(time.Millisecond))
	c.wantServed(t, after)
	// Its containers still run: jacod's death does not end them.
	for _, id := range lost {
		if _, err := c.runningPid(dead.name, id); err != nil {
			t.Errorf("container of %s's replica %s while it was down: %v", dead.name, id, err)
		}
	}

	dead.restart(t)
	back := time.Now()
	c.waitNodes(t, []*nsDaemon{dead}, "ready")
	c.waitGone(t, dead.name, lost)
	t.Logf("%s back: surplus containers %v gone after %v", dead.name, lost, time.Since(back).Round(time.Millisecond))
	c.waitRunning(t, "web", 3, nil)
	wantOK(t, c.manager.jaco("service", "rm", "web"))
}

// testSpreadZones: four replicas spread over node.labels.zone, two
// workers in each of zones a and b, run two per zone.
func testSpreadZones(t *testing.T, c *ccluster) {
	zone := map[string]string{}
	for i, w := range c.workers {
		z := []string{"a", "b"}[i%2]
		zone[w.name] = z
		wantOK(t, c.manager.jaco("node", "update", "--label-add", "zone="+z, w.name))
	}
	c.createService(t, "zoned", []string{"--replicas", "4", "--placement-pref", "spread=node.labels.zone"}, idleCmd)
	reps := c.waitRunning(t, "zoned", 4, nil)
	perZone := map[string]int{}
	for _, r := range reps {
		perZone[zone[r.Node]]++
	}
	if perZone["a"] != 2 || perZone["b"] != 2 {
		t.Fatalf("replicas per zone %v, want 2 in a and 2 in b: %v", perZone, reps)
	}
	// zoned keeps running: testAgentRestart adopts its replicas.
}

// waitingOnDependency is the state `service ps` shows for a replica held
// back until a service it depends on has a healthy replica.
const waitingOnDependency = "pending: waiting_on_dependency"

// testDependency: app depends on db, whose health check passes only once
// a file exists in a directory of the node bind-mounted into db. app's
// replica is held pending while db's container runs unhealthy, and
// starts once the test makes the file and db turns healthy.
func testDependency(t *testing.T, c *ccluster) {
	ready := t.TempDir()
	c.createService(t, "db", []string{"--mount", ready + ":/ready:ro", "--health-cmd", "test -f /ready/ok",
		"--health-interval", "500ms", "--health-timeout", "2s", "--health-start-period", "2m"}, idleCmd)
	c.createService(t, "app", []string{"--depends-on", "db"}, idleCmd)
	appWaits := func() error {
		reps, err := c.ps("app", false)
		if err != nil {
			return err
		}
		if len(reps) != 1 || reps[0].State != waitingOnDependency {
			return fmt.Errorf("app: %v; want one replica %q", reps, waitingOnDependency)
		}
		return nil
	}
	eventually(t, replicaTimeout, appWaits)
	// db's container runs, but a replica with a health check counts as
	// starting until its first check passes (as in Swarm).
	eventually(t, replicaTimeout, func() error {
		reps, err := c.ps("db", false)
		if err != nil {
			return err
		}
		if len(reps) != 1 || reps[0].State != "starting" || reps[0].Node == "" {
			return fmt.Errorf("db: %v; want one replica starting on a node", reps)
		}
		_, err = c.runningPid(reps[0].Node, reps[0].ID)
		return err
	})
	// app keeps waiting over several of db's failing health checks.
	holds(t, 3*time.Second, "while db is unhealthy", appWaits)
	if err := os.WriteFile(filepath.Join(ready, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	healthyFrom := time.Now()
	c.waitRunning(t, "db", 1, nil)
	app := c.waitRunning(t, "app", 1, nil)
	t.Logf("app running %v after db's check could pass", time.Since(healthyFrom).Round(time.Millisecond))
	if app[0].Since.Before(healthyFrom) {
		t.Errorf("app running since %v, before db could be healthy (%v)", app[0].Since, healthyFrom)
	}
	wantOK(t, c.manager.jaco("service", "rm", "app", "db"))
}

// didNotStop is what the containerd runtime logs when a replica ignored
// SIGINT and SIGQUIT and is SIGKILLed.
var didNotStop = regexp.MustCompile(`did not stop in time`)

// testStopLadder: a replica whose PID 1 is sleep (the kernel drops
// SIGINT and SIGQUIT for a PID 1 without handlers) with grace periods of
// 1 s is gone a few seconds after its service is removed, and its node
// logs that it had to be killed.
func testStopLadder(t *testing.T, c *ccluster) {
	c.createService(t, "ladder", nil, []string{"sleep", "3600"})
	rep := c.waitRunning(t, "ladder", 1, nil)[0]
	if _, err := c.runningPid(rep.Node, rep.ID); err != nil {
		t.Fatal(err)
	}
	d := c.byName(rep.Node)
	wantOK(t, c.manager.jaco("service", "rm", "ladder"))
	removed := time.Now()
	c.waitGone(t, rep.Node, []string{rep.ID})
	took := time.Since(removed)
	t.Logf("ladder replica %s gone %v after service rm", rep.ID, took.Round(time.Millisecond))
	if took < 2*time.Second {
		t.Errorf("replica ignoring SIGINT and SIGQUIT gone after %v, before both 1 s grace periods passed", took)
	}
	if took > 15*time.Second {
		t.Errorf("replica gone only %v after service rm, want a few seconds (grace periods 1 s + 1 s)", took)
	}
	eventually(t, 10*time.Second, func() error {
		for _, line := range strings.Split(d.logSince(), "\n") {
			if didNotStop.MatchString(line) && strings.Contains(line, rep.ID) {
				return nil
			}
		}
		return fmt.Errorf("%s's log has no line matching %q naming %s", d.name, didNotStop, rep.ID)
	})
}

// testAgentRestart: a worker's jacod stopped gracefully and started again
// finds its running containers and keeps them: the same replicas, the
// same processes, still running once its new session is up.
func testAgentRestart(t *testing.T, c *ccluster) {
	reps := c.waitRunning(t, "zoned", 4, nil)
	w := c.byName(reps[0].Node)
	pids := map[string]uint32{}
	for _, r := range reps {
		if r.Node != w.name {
			continue
		}
		pid, err := c.runningPid(w.name, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		pids[r.ID] = pid
	}
	w.restart(t)
	eventually(t, replicaTimeout, func() error {
		if !strings.Contains(w.logSince(), "dispatcher session open") {
			return fmt.Errorf("%s has not opened a dispatcher session since its restart", w.name)
		}
		return nil
	})
	// Several heartbeats and assignment rounds of the new session.
	check := func() error {
		now, err := c.ps("zoned", false)
		if err != nil {
			return err
		}
		for id, pid := range pids {
			i := slices.IndexFunc(now, func(r replica) bool { return r.ID == id })
			if i < 0 || now[i].Node != w.name || now[i].State != "running" {
				return fmt.Errorf("replica %s of restarted %s: want it running there; ps: %v", id, w.name, now)
			}
			got, err := c.runningPid(w.name, id)
			if err != nil {
				return err
			}
			if got != pid {
				return fmt.Errorf("replica %s runs as pid %d after the restart, was %d", id, got, pid)
			}
		}
		return nil
	}
	holds(t, 3*time.Second, "after the agent restart", check)
	c.waitRunning(t, "zoned", 4, nil)
	wantOK(t, c.manager.jaco("service", "rm", "zoned"))
}

// testDrainWorker: `jaco node remove` of a worker running health-checked
// containers moves them start-first — sampled throughout, the service
// never has fewer healthy replicas than it wants — and the node is gone.
func testDrainWorker(t *testing.T, c *ccluster) {
	c.createService(t, "steady", []string{"--replicas", "3", "--health-http", "80/", "--health-interval", "200ms"}, webCmd)
	reps := c.waitRunning(t, "steady", 3, nil)
	victim := c.byName(reps[0].Node)
	healthy := func() (int, error) {
		rs, err := c.ps("steady", false)
		n := 0
		for _, r := range rs {
			if r.State == "running" {
				n++
			}
		}
		return n, err
	}
	victim.allowExit() // a removed node stops
	fewest, samples := fewestDuring(healthy, func() { wantOK(t, c.manager.jaco("node", "remove", victim.name)) })
	if fewest < 3 {
		t.Errorf("while %s drained, steady had %d healthy replicas in one of %d samples, want 3", victim.name, fewest, samples)
	}
	c.waitRunning(t, "steady", 3, func(r replica) error {
		if r.Node == victim.name {
			return fmt.Errorf("%s still on %s", r.ID, victim.name)
		}
		return nil
	})
	wantOK(t, c.manager.jaco("service", "rm", "steady"))
}
