package integration

// Named volumes with real containers (docs/adr/0061-volumes.md): a
// stateful service's data outlives its replicas (a killed container, an
// update, the agent's restart), the replicas never leave the volume's
// node (a drained node leaves them waiting, volume_unavailable), a volume
// in use cannot be removed and its node deletes the directory once it is;
// and a compose stack's named volume is kept by stack rm and removed by
// stack rm --volumes. One cluster of two workers for every step, in order.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dbCmd appends a line to /data/log each time a replica starts (with
// $X, which an update sets), then idles until SIGINT.
var dbCmd = []string{"sh", "-c", `echo "start X=${X:-unset}" >> /data/log; trap 'exit 0' INT TERM; while :; do sleep 1 & wait $!; done`}

// volumeState is what the tests read of `jaco volume inspect`.
type volumeState struct {
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	Spec     struct {
		Labels  map[string]string `json:"labels"`
		Options map[string]string `json:"options"`
	} `json:"spec"`
	Services []string `json:"services"`
}

func TestVolumes(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newContainerCluster(t, 2)
	t.Logf("cluster of %d workers with the image loaded after %v", len(c.workers), time.Since(start).Round(time.Millisecond))
	v := &volumeTest{c: c}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"first start writes to the volume", v.firstStart},
		{"killed replica's successor finds the data", v.killed},
		{"updated replica finds the data", v.updated},
		{"jacod restart keeps replica and data", v.agentRestart},
		{"drained volume node: pending volume_unavailable, never elsewhere", v.drained},
		{"volume rm refused while used, then deletes the node's directory", v.removed},
		{"stack rm keeps the stack's volume, --volumes removes it", v.stack},
		{"a Swarm-style stack: secret file, templates, volume, job", v.swarmStyleStack},
	}
	for _, tc := range cases {
		caseStart := time.Now()
		if !t.Run(tc.name, tc.run) {
			return // later cases build on earlier ones
		}
		t.Logf("%s: %v", tc.name, time.Since(caseStart).Round(time.Millisecond))
	}
}

// volumeTest carries what the steps learn: the volume's node (its
// daemon) and the other worker.
type volumeTest struct {
	c           *ccluster
	home, other *nsDaemon
}

// dataFile is where the volume name keeps file on node d: under its data
// dir's volumes (jacod's default --volumes-dir).
func dataFile(d *nsDaemon, volume, file string) string {
	return filepath.Join(d.dir, "volumes", volume, "_data", file)
}

// logLines reads /data/log as replica r sees it, through its container's
// root, and the same file in the home node's volume directory: both must
// say the same.
func (v *volumeTest) logLines(r replica) ([]string, error) {
	pid, err := v.c.runningPid(r.Node, r.ID)
	if err != nil {
		return nil, err
	}
	inside, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/data/log", pid))
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", r.ID, err)
	}
	onNode, err := os.ReadFile(dataFile(v.c.byName(r.Node), "dbdata", "log"))
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", r.Node, err)
	}
	if string(inside) != string(onNode) {
		return nil, fmt.Errorf("replica %s sees %q, its node's volume directory holds %q", r.ID, inside, onNode)
	}
	return strings.Split(strings.TrimSuffix(string(inside), "\n"), "\n"), nil
}

// waitLog waits until db has one running replica, on the volume's node,
// other than not (an id, or ""), that sees want in /data/log.
func (v *volumeTest) waitLog(t *testing.T, not string, want ...string) replica {
	t.Helper()
	var got replica
	eventually(t, replicaTimeout, func() error {
		reps, err := v.c.ps("db", false)
		if err != nil {
			return err
		}
		if len(reps) != 1 || reps[0].State != "running" || reps[0].ID == not {
			return fmt.Errorf("db: %v; want one new replica running", reps)
		}
		if reps[0].Node != v.home.name {
			t.Fatalf("db's replica %s runs on %s; its volume lives on %s", reps[0].ID, reps[0].Node, v.home.name)
		}
		lines, err := v.logLines(reps[0])
		if err != nil {
			return err
		}
		if !slices.Equal(lines, want) {
			return fmt.Errorf("/data/log of %s: %q, want %q", reps[0].ID, lines, want)
		}
		got = reps[0]
		return nil
	})
	return got
}

func (v *volumeTest) inspect(name string) (volumeState, error) {
	return decode[volumeState](v.c.manager.jaco("volume", "inspect", name))
}

// firstStart: the service creates dbdata (it does not exist), the
// scheduler records the node of the first replica, and the replica's line
// is in the node's volume directory. A ballast service of two replicas
// pinned to that node then makes it the one the scheduler's spread would
// avoid, so the later steps show that db follows its volume, not the
// spread.
func (v *volumeTest) firstStart(t *testing.T) {
	v.c.createService(t, "db", []string{"--mount", "type=volume,source=dbdata,target=/data"}, dbCmd)
	reps := v.c.waitRunning(t, "db", 1, nil)
	v.home = v.c.byName(reps[0].Node)
	for _, w := range v.c.workers {
		if w != v.home {
			v.other = w
		}
	}
	vol, err := v.inspect("dbdata")
	if err != nil || vol.NodeID != v.c.nodeIDs[v.home.name] || vol.Hostname != v.home.name || !slices.Equal(vol.Services, []string{"db"}) {
		t.Fatalf("volume dbdata: %+v (%v); want it on %s, named by db", vol, err, v.home.name)
	}
	v.waitLog(t, "", "start X=unset")
	v.c.createService(t, "ballast", []string{"--replicas", "2", "--constraint", "node.hostname==" + v.home.name}, idleCmd)
	v.c.waitRunning(t, "ballast", 2, nil)
}

// killed: the replica's process killed from outside, its successor (a
// new replica) starts on the same node and finds the first line.
func (v *volumeTest) killed(t *testing.T) {
	reps := v.c.waitRunning(t, "db", 1, nil)
	pid, err := v.c.runningPid(reps[0].Node, reps[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatalf("kill pid %d of replica %s: %v", pid, reps[0].ID, err)
	}
	v.waitLog(t, reps[0].ID, "start X=unset", "start X=unset")
}

// updated: an update replaces the replica; the new one, with X=1, finds
// both lines and adds its own.
func (v *volumeTest) updated(t *testing.T) {
	reps := v.c.waitRunning(t, "db", 1, nil)
	wantOK(t, v.c.manager.jaco("service", "update", "-d", "--env-add", "X=1", "db"))
	v.waitLog(t, reps[0].ID, "start X=unset", "start X=unset", "start X=1")
}

// agentRestart: the home node's jacod restarted adopts the running
// replica; the data is as it was.
func (v *volumeTest) agentRestart(t *testing.T) {
	reps := v.c.waitRunning(t, "db", 1, nil)
	pid, err := v.c.runningPid(reps[0].Node, reps[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	v.home.restart(t)
	eventually(t, replicaTimeout, func() error {
		if !strings.Contains(v.home.logSince(), "dispatcher session open") {
			return fmt.Errorf("%s has not opened a dispatcher session since its restart", v.home.name)
		}
		return nil
	})
	v.c.waitNodes(t, []*nsDaemon{v.home}, "ready")
	r := v.waitLog(t, "", "start X=unset", "start X=unset", "start X=1")
	if got, err := v.c.runningPid(r.Node, r.ID); r.ID != reps[0].ID || err != nil || got != pid {
		t.Fatalf("after the restart db runs %s as pid %d (%v); want %s adopted as pid %d", r.ID, got, err, reps[0].ID, pid)
	}
}

// drained: with the volume's node drained, db's replacement waits
// PENDING, volume_unavailable, naming the volume and the node, and is
// never placed on the other worker (which is active and idle). A drain
// is start-first (docs/adr/0061-volumes.md): the old replica keeps the
// data served on the drained node meanwhile. Back to active, db runs on
// the same node again with the data.
func (v *volumeTest) drained(t *testing.T) {
	before := v.c.waitRunning(t, "db", 1, nil)
	wantOK(t, v.c.manager.jaco("node", "update", "--availability", "drain", v.home.name))
	drainActive := true
	defer func() {
		if drainActive {
			v.c.manager.jaco("node", "update", "--availability", "active", v.home.name)
		}
	}()
	waitingRight := func() error {
		reps, err := v.c.ps("db", false)
		if err != nil {
			return err
		}
		var pending []replica
		oldRuns := false
		for _, r := range reps {
			switch {
			case r.Node == v.other.name:
				t.Fatalf("db's replica %s was placed on %s; its volume lives on %s: %v", r.ID, r.Node, v.home.name, reps)
			case strings.HasPrefix(r.State, "pending"):
				pending = append(pending, r)
			case r.ID == before[0].ID && r.State == "running" && r.Node == v.home.name:
				oldRuns = true
			default:
				return fmt.Errorf("db: %v; want the old replica running and one pending", reps)
			}
		}
		if !oldRuns {
			return fmt.Errorf("db: %v; want the old replica %s still running on %s", reps, before[0].ID, v.home.name)
		}
		if len(pending) != 1 || pending[0].State != "pending: volume_unavailable" ||
			!strings.Contains(pending[0].Message, "volume dbdata lives on node "+v.home.name) {
			return fmt.Errorf("db: %v; want one replica pending: volume_unavailable naming dbdata and %s", reps, v.home.name)
		}
		return nil
	}
	eventually(t, replicaTimeout, waitingRight)
	// Several scheduling rounds: it stays so.
	holds(t, 3*time.Second, "while "+v.home.name+" is drained", waitingRight)
	var raw []map[string]any
	if err := func() (err error) {
		raw, err = decode[[]map[string]any](v.c.manager.jaco("service", "ps", "db", "--format", "json"))
		return err
	}(); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(raw, func(m map[string]any) bool { return m["reason"] == "volume_unavailable" }) {
		t.Errorf("service ps db --format json: %v; want a replica with reason volume_unavailable", raw)
	}

	wantOK(t, v.c.manager.jaco("node", "update", "--availability", "active", v.home.name))
	drainActive = false
	// Whichever replica runs now (the old one, or its replacement with a
	// line of its own), it runs on the home node with the data.
	eventually(t, replicaTimeout, func() error {
		reps, err := v.c.ps("db", false)
		if err != nil {
			return err
		}
		if len(reps) != 1 || reps[0].State != "running" || reps[0].Node != v.home.name {
			return fmt.Errorf("db: %v; want one replica running on %s", reps, v.home.name)
		}
		lines, err := v.logLines(reps[0])
		if err != nil {
			return err
		}
		want := []string{"start X=unset", "start X=unset", "start X=1"}
		if !slices.Equal(lines, want) && !slices.Equal(lines, append(want, "start X=1")) {
			return fmt.Errorf("/data/log: %q, want %q and perhaps one more start", lines, want)
		}
		t.Logf("back to active: replica %s (before the drain: %s) runs on %s, /data/log %q", reps[0].ID, before[0].ID, reps[0].Node, lines)
		return nil
	})
}

// removed: volume rm is refused volume_in_use while db names the volume;
// once db is removed and its replica gone it succeeds, and the home node
// deletes the volume's directory.
func (v *volumeTest) removed(t *testing.T) {
	reps := v.c.waitRunning(t, "db", 1, nil)
	r := v.c.manager.jaco("volume", "rm", "dbdata")
	wantError(t, r, 1, "volume_in_use")
	if !strings.Contains(r.stderr, "used by services db") {
		t.Errorf("volume rm dbdata while db runs: %q; want it to name db", r.stderr)
	}
	wantOK(t, v.c.manager.jaco("service", "rm", "db", "ballast"))
	v.c.waitGone(t, v.home.name, []string{reps[0].ID})
	// The replica's end reaches the manager just after its container
	// goes: until then the volume is still in use by it.
	eventually(t, replicaTimeout, func() error {
		r := v.c.manager.jaco("volume", "rm", "dbdata")
		if r.code != 0 && !strings.Contains(r.stderr, "volume_in_use") {
			t.Fatalf("volume rm dbdata: %v; want success or volume_in_use while the replica ends", r.err())
		}
		return r.err()
	})
	dir := filepath.Join(v.home.dir, "volumes", "dbdata")
	eventually(t, replicaTimeout, func() error {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			return fmt.Errorf("%s still there (%v)", dir, err)
		}
		return nil
	})
	if r := v.c.manager.jaco("volume", "inspect", "dbdata"); r.code == 0 || !strings.Contains(r.stderr, "not_found") {
		t.Errorf("volume inspect dbdata after rm: exit %d, %q; want not_found", r.code, r.stderr)
	}
}

// wpStack is WordPress with MySQL, as compose files write it, with the
// test image standing in for both (no registry is reachable): db keeps
// its data in a named volume, appending a line on each start; wordpress
// mounts a named volume of the stack and an external one. Both obey
// SIGINT at once (a shell with a trap; httpd as PID 1 would ignore it and
// sit out the default 30 s abort grace period compose cannot shorten), so
// stack rm --volumes waits for little.
const wpStack = `
services:
  db:
    image: ` + containerImage + `
    command: ["sh", "-c", "echo started >> /var/lib/mysql/log; trap 'exit 0' INT TERM; while :; do sleep 1 & wait $$!; done"]
    environment:
      MYSQL_DATABASE: wordpress
    stop_grace_period: 1s
    volumes:
      - db_data:/var/lib/mysql
    deploy:
      restart_policy: {delay: 1s}
  wordpress:
    image: ` + containerImage + `
    command: ["sh", "-c", "trap 'exit 0' INT TERM; while :; do sleep 1 & wait $$!; done"]
    depends_on: [db]
    environment:
      WORDPRESS_DB_HOST: db
    stop_grace_period: 1s
    volumes:
      - wp_content:/var/www/html/wp-content:nocopy
      - uploads:/uploads:ro
    deploy:
      restart_policy: {delay: 1s}
volumes:
  db_data:
  wp_content:
    labels: {app: wordpress}
  uploads:
    external: true
    name: wp-uploads
`

// stack: the deploy creates the stack's volumes labelled as its own; rm
// keeps them (and a redeploy finds db's data), rm --volumes removes them
// and their directories, but never the external volume.
func (v *volumeTest) stack(t *testing.T) {
	c := v.c
	file := filepath.Join(t.TempDir(), "compose.yaml")
	if err := os.WriteFile(file, []byte(wpStack), 0o600); err != nil {
		t.Fatal(err)
	}
	// The external volume must exist: refused, before any write, without.
	r := c.manager.jaco("stack", "deploy", "-d", "-c", file, "wp")
	if r.code != 1 || !strings.Contains(r.stderr, "external volume wp-uploads does not exist") {
		t.Fatalf("deploy without the external volume: exit %d, stderr %q; want 1 naming wp-uploads", r.code, r.stderr)
	}
	stackGone(t, c, "wp")
	wantOK(t, c.manager.jaco("volume", "create", "wp-uploads"))

	deploy := wantOK(t, c.manager.jaco("stack", "deploy", "-d", "-c", file, "wp"))
	if !strings.Contains(deploy.stdout, "Creating volume wp_db_data\n") || !strings.Contains(deploy.stdout, "Creating volume wp_wp_content\n") {
		t.Errorf("deploy printed %q; want the two volumes created", deploy.stdout)
	}
	db := c.waitRunning(t, "wp_db", 1, nil)
	c.waitRunning(t, "wp_wordpress", 1, nil)
	for name, labels := range map[string]map[string]string{
		"wp_db_data":    {"jaco.stack.namespace": "wp"},
		"wp_wp_content": {"jaco.stack.namespace": "wp", "app": "wordpress"},
	} {
		vol, err := v.inspect(name)
		if err != nil || !mapsEqual(vol.Spec.Labels, labels) {
			t.Errorf("volume %s: labels %v (%v), want %v", name, vol.Spec.Labels, err, labels)
		}
	}
	home := c.byName(db[0].Node)
	logFile := dataFile(home, "wp_db_data", "log")
	eventually(t, replicaTimeout, func() error { return fileLines(logFile, 1) })

	// rm keeps the volumes, saying so; their data is there for the next
	// deploy, on the same node.
	rm := wantOK(t, c.manager.jaco("stack", "rm", "wp"))
	if !strings.Contains(rm.stdout, "Keeping volumes wp_db_data, wp_wp_content (their data stays); remove them with jaco stack rm --volumes wp") {
		t.Errorf("stack rm printed %q; want the line naming the kept volumes", rm.stdout)
	}
	stackGone(t, c, "wp")
	vols := volumeNames(t, c)
	for _, name := range []string{"wp_db_data", "wp_wp_content", "wp-uploads"} {
		if !slices.Contains(vols, name) {
			t.Errorf("volume %s gone after stack rm: %v", name, vols)
		}
	}
	again := wantOK(t, c.manager.jaco("stack", "deploy", "-d", "-c", file, "wp"))
	if strings.Contains(again.stdout, "Creating volume") {
		t.Errorf("redeploy printed %q; the volumes exist and are not created again", again.stdout)
	}
	if db2 := c.waitRunning(t, "wp_db", 1, nil); db2[0].Node != home.name {
		t.Errorf("redeployed db runs on %s; its volume lives on %s", db2[0].Node, home.name)
	}
	eventually(t, replicaTimeout, func() error { return fileLines(logFile, 2) })

	// rm --volumes takes the stack's volumes once the replicas have
	// stopped, and their directories with them; the external one stays.
	rm = wantOK(t, c.manager.jaco("stack", "rm", "--volumes", "wp"))
	if !strings.Contains(rm.stdout, "Removing volume wp_db_data\n") || !strings.Contains(rm.stdout, "Removing volume wp_wp_content\n") ||
		strings.Contains(rm.stdout, "wp-uploads") || strings.Contains(rm.stdout, "Keeping") {
		t.Errorf("stack rm --volumes printed %q; want the stack's two volumes removed, nothing of wp-uploads", rm.stdout)
	}
	vols = volumeNames(t, c)
	if slices.Contains(vols, "wp_db_data") || slices.Contains(vols, "wp_wp_content") || !slices.Contains(vols, "wp-uploads") {
		t.Errorf("volumes after stack rm --volumes: %v; want wp-uploads alone of the three", vols)
	}
	eventually(t, replicaTimeout, func() error {
		for _, d := range c.workers {
			for _, name := range []string{"wp_db_data", "wp_wp_content"} {
				if _, err := os.Stat(filepath.Join(d.dir, "volumes", name)); !os.IsNotExist(err) {
					return fmt.Errorf("%s's directory of %s still there (%v)", d.name, name, err)
				}
			}
		}
		return nil
	})
	wantOK(t, c.manager.jaco("volume", "rm", "wp-uploads"))
}

// fileLines checks that path holds n lines.
func fileLines(path string, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if got := strings.Count(string(b), "\n"); got != n {
		return fmt.Errorf("%s holds %d lines (%q), want %d", path, got, b, n)
	}
	return nil
}

func volumeNames(t *testing.T, c *ccluster) []string {
	t.Helper()
	return strings.Fields(wantOK(t, c.manager.jaco("volume", "ls", "--format", "{{.name}}")).stdout)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
