package integration

// The harness of the container tests: a cluster of one manager and some
// workers in network namespaces (netns_test.go) sharing one private
// containerd, the demo image loaded on every node, and ways to look at
// what really runs, straight from containerd rather than through jaco.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ctrdclient "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/ociimage"
)

// Deadlines of the container tests, generous for a loaded two-core CI
// machine: a replica is scheduled within a second and starts in about
// one; a node missing three heartbeats of 500 ms is DOWN within seconds.
const (
	replicaTimeout = 60 * time.Second // replicas reach the asked state
	goneTimeout    = 30 * time.Second // a stopped container disappears
)

// containerImage is the image every container test runs.
const containerImage = "jaco.local/busybox:test"

// indexPage is what the image's web server answers on /.
const indexPage = "hello from a jaco replica\n"

// webCmd serves /www on port 80 in the foreground.
var webCmd = []string{"httpd", "-f", "-p", "80", "-h", "/www"}

// idleCmd runs until SIGINT, which it obeys at once (a shell as PID 1
// with a trap), so replicas that are removed do not sit out grace periods.
var idleCmd = []string{"sh", "-c", "trap 'exit 0' INT TERM; while :; do sleep 1 & wait $!; done"}

// quickStop are the flags every service of these tests takes: a short
// stop ladder and restart delay, so nothing waits on defaults meant for
// production.
var quickStop = []string{"--stop-grace-period", "1s", "--abort-grace-period", "1s", "--restart-delay", "1s"}

// ccluster is a manager (drained: it runs no replicas) and workers, every
// node running containers through the one shared containerd.
type ccluster struct {
	hub      *hub
	ctrd     *containerdtest.Daemon
	client   *ctrdclient.Client
	manager  *nsDaemon
	workers  []*nsDaemon
	nodeIDs  map[string]string // hostname -> node id
	imageTar string
}

// newContainerCluster starts containerd, a manager and n workers, loads
// the test image on every node and waits until every worker is ready.
func newContainerCluster(t testing.TB, n int) *ccluster {
	t.Helper()
	requireNetns(t)
	c := &ccluster{ctrd: containerdtest.Start(t), nodeIDs: map[string]string{}}
	cl, err := ctrdclient.New(c.ctrd.Address())
	if err != nil {
		t.Fatalf("containerd client: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	c.client = cl
	c.imageTar = buildTestImage(t)
	c.hub = newHub(t)
	withCtrd := []string{"--containerd-address", c.ctrd.Address()}

	c.manager = c.addNode(t, "m1", append(withCtrd, "--heartbeat-period", "500ms")...)
	c.manager.initCluster(t, "--overlay-pool", testOverlayPool)
	for i := 1; i <= n; i++ {
		c.joinWorker(t, c.addNode(t, fmt.Sprintf("w%d", i), withCtrd...))
	}
	wantOK(t, c.manager.jaco("node", "update", "--availability", "drain", "m1"))
	c.loadImage(t, c.manager)
	c.waitNodes(t, c.workers, "ready")
	return c
}

// joinWorker joins d, started, to the cluster as a worker, learns the
// node ids and loads the test image on d.
func (c *ccluster) joinWorker(t testing.TB, d *nsDaemon) {
	t.Helper()
	wantOK(t, d.join(c.manager, c.manager.joinToken(t, "worker")))
	c.workers = append(c.workers, d)
	nodes, err := c.manager.tryNodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		c.nodeIDs[nd.Hostname] = nd.ID
	}
	for _, d := range c.all() {
		if c.nodeIDs[d.name] == "" {
			t.Fatalf("node ls lacks %s: %+v", d.name, nodes)
		}
	}
	c.loadImage(t, d)
}

// addNode starts jacod on a new host.
func (c *ccluster) addNode(t testing.TB, name string, flags ...string) *nsDaemon {
	t.Helper()
	return c.hub.addHost(t).startJacod(t, name, flags...)
}

func (c *ccluster) all() []*nsDaemon {
	if c.manager == nil {
		return nil
	}
	return append([]*nsDaemon{c.manager}, c.workers...)
}

// byName returns the daemon whose node is called name, or nil.
func (c *ccluster) byName(name string) *nsDaemon {
	for _, d := range c.all() {
		if d.name == name {
			return d
		}
	}
	return nil
}

// buildTestImage writes the test image's archive: busybox with httpd and
// a web root.
func buildTestImage(t testing.TB) string {
	t.Helper()
	return buildImage(t, containerImage)
}

// buildImage writes the test image, named name, as an OCI archive.
func buildImage(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ociimage.Build(f, name, ociimage.WithFile("/www/index.html", []byte(indexPage), 0o644)); err != nil {
		t.Fatalf("build test image (needs busybox-static): %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadImage loads the test image on d through its socket and checks it
// names the image.
func (c *ccluster) loadImage(t testing.TB, d *nsDaemon) {
	t.Helper()
	r := wantOK(t, d.jaco("image", "load", c.imageTar))
	if !strings.Contains(r.stdout, containerImage) {
		t.Fatalf("image load on %s printed %q, want %s", d.name, r.stdout, containerImage)
	}
}

// nodeState is one node of `jaco status --format json`.
type nodeState struct {
	Hostname     string `json:"hostname"`
	Status       string `json:"status"`
	Availability string `json:"availability"`
}

// nodesIn checks that r, the answer of `jaco status --format json`, shows
// every named node in status.
func nodesIn(r result, status string, names ...string) error {
	s, err := decode[struct {
		Nodes []nodeState `json:"nodes"`
	}](r)
	if err != nil {
		return err
	}
	for _, name := range names {
		i := slices.IndexFunc(s.Nodes, func(n nodeState) bool { return n.Hostname == name })
		if i < 0 || !strings.EqualFold(s.Nodes[i].Status, status) {
			return fmt.Errorf("want %s %s; nodes: %+v", name, status, s.Nodes)
		}
	}
	return nil
}

// waitNodes waits until the manager sees every one of ds in status.
func (c *ccluster) waitNodes(t testing.TB, ds []*nsDaemon, status string) {
	t.Helper()
	var names []string
	for _, d := range ds {
		names = append(names, d.name)
	}
	eventually(t, replicaTimeout, func() error {
		return nodesIn(c.manager.jaco("status", "--format", "json"), status, names...)
	})
}

// ps lists a service's replicas as the manager sees them (all: with
// history).
func (c *ccluster) ps(svc string, all bool) ([]replica, error) {
	args := []string{"service", "ps", svc, "--format", "json"}
	if all {
		args = append(args, "--all")
	}
	return decode[[]replica](c.manager.jaco(args...))
}

// waitRunning waits until svc has exactly n replicas desired running, all
// running, each passing check (nil: no check), and returns them.
func (c *ccluster) waitRunning(t testing.TB, svc string, n int, check func(replica) error) []replica {
	t.Helper()
	var reps []replica
	eventually(t, replicaTimeout, func() (err error) {
		if reps, err = c.ps(svc, false); err != nil {
			return err
		}
		var running int
		for _, r := range reps {
			if r.State == "running" && r.Node != "" && (check == nil || check(r) == nil) {
				running++
			}
		}
		if running != n || len(reps) != n {
			return fmt.Errorf("%s: want %d running replicas, have %d of %d: %v", svc, n, running, len(reps), reps)
		}
		return nil
	})
	return reps
}

// createService runs `jaco service create --name name FLAGS IMAGE -- CMD`.
func (c *ccluster) createService(t testing.TB, name string, flags []string, cmd []string) {
	t.Helper()
	args := append([]string{"service", "create", "-d", "--name", name}, quickStop...)
	args = append(append(append(args, flags...), containerImage, "--"), cmd...)
	wantOK(t, c.manager.jaco(args...))
}

// container is what containerd says of one container of a node.
type container struct {
	id      string
	pid     uint32 // 0 without a task
	running bool
}

// containers lists the containers of node name, from containerd itself
// (in the namespace the node's runtime derives from its id).
func (c *ccluster) containers(name string) ([]container, error) {
	id := c.nodeIDs[name]
	if id == "" {
		return nil, fmt.Errorf("no node id known for %s", name)
	}
	names, err := ctrd.NamesFor(id, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = namespaces.WithNamespace(ctx, names.Namespace)
	list, err := c.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("containers of %s: %w", name, err)
	}
	var out []container
	for _, ct := range list {
		e := container{id: ct.ID()}
		task, err := ct.Task(ctx, nil)
		switch {
		case errdefs.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("task of %s on %s: %w", ct.ID(), name, err)
		default:
			e.pid = task.Pid()
			st, err := task.Status(ctx)
			if err != nil && !errdefs.IsNotFound(err) {
				return nil, fmt.Errorf("status of %s on %s: %w", ct.ID(), name, err)
			}
			e.running = st.Status == ctrdclient.Running
		}
		out = append(out, e)
	}
	return out, nil
}

// runningPid returns the pid of replica id's running container on node
// name.
func (c *ccluster) runningPid(name, id string) (uint32, error) {
	cs, err := c.containers(name)
	if err != nil {
		return 0, err
	}
	for _, ct := range cs {
		if ct.id == id {
			if !ct.running || ct.pid == 0 {
				return 0, fmt.Errorf("container %s on %s is not running: %+v", id, name, ct)
			}
			return ct.pid, nil
		}
	}
	return 0, fmt.Errorf("no container %s on %s (have %+v)", id, name, cs)
}

// waitGone waits until node name has no container for any of ids.
func (c *ccluster) waitGone(t testing.TB, name string, ids []string) {
	t.Helper()
	eventually(t, goneTimeout, func() error {
		cs, err := c.containers(name)
		if err != nil {
			return err
		}
		var left []container
		for _, ct := range cs {
			if slices.Contains(ids, ct.id) {
				left = append(left, ct)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%s still has containers %+v", name, left)
		}
		return nil
	})
}

// httpGet asks for path on addr (host:port) from inside from's network
// namespace and returns the body of a 200 answer. Go rather than a wget
// in the namespace: Debian's static busybox wget crashes on the host, and
// no other client is sure to be installed.
func httpGet(from *host, addr, path string) (string, error) {
	return getBody("/var/run/netns/"+from.ns, addr, path, 5*time.Second)
}

// holds calls cond every 250ms for d and fails the test, naming during,
// the first time it returns an error: eventually's counterpart, for what
// must stay true.
func holds(t testing.TB, d time.Duration, during string, cond func() error) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", during, err)
		}
	}
}

// dialIn connects to addr over TCP from inside the network namespace at
// path, giving up after timeout (a socket keeps the namespace it was made
// in; inNetns moves the thread).
func dialIn(path, addr string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := inNetns(path, func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, err
	}
	return conn, nil
}
