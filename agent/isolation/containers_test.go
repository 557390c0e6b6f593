package isolation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/ociimage"
	"github.com/jaco-project/jaco/internal/testenv"
)

const testImage = "jaco.local/busybox-isolation:latest"

// containerNode is a containerd runtime wired to a loaded ruleset, as
// the daemon wires them (node/workload.go, agent/netplane.LoadIsolation).
type containerNode struct {
	rt  *ctrd.Runtime
	iso *Ruleset
}

func newContainerNode(t *testing.T) containerNode {
	t.Helper()
	if _, err := os.Stat(ociimage.DefaultBusybox); err != nil {
		testenv.SkipOrFail(t, "busybox-static missing: %v", err)
	}
	d := containerdtest.Start(t)
	const nodeID = "isolation-node"
	names, err := ctrd.NamesFor(nodeID, "")
	if err != nil {
		t.Fatal(err)
	}
	iso := New(names.Network)
	if err := iso.Load(); err != nil {
		t.Fatalf("load isolation: %v", err)
	}
	rt, err := ctrd.New(context.Background(), d.Address(), ctrd.WithNodeID(nodeID),
		ctrd.WithStateDir(filepath.Join(d.Dir(), "node")), ctrd.WithIsolation(iso))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		if out, err := osexec.Command("ip", "link", "del", names.Bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find") {
			t.Logf("delete bridge %s: %v: %s", names.Bridge, err, out)
		}
	})
	var img bytes.Buffer
	if err := ociimage.Build(&img, testImage, ociimage.WithFile("/var/www/index.html", []byte("ok\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.LoadImage(context.Background(), &img); err != nil {
		t.Fatal(err)
	}
	return containerNode{rt: rt, iso: iso}
}

// replica is one running httpd replica of service.
type replica struct {
	service string
	ctl     exec.Controller
	addr    string
}

// run starts a replica of service serving HTTP on 8080 and removes it
// when t ends.
func (n containerNode) run(t *testing.T, id, service string, spec *api.ServiceSpec) replica {
	t.Helper()
	spec.Image = testImage
	spec.Command = []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"}
	rep := exec.Replica{
		Task:    &api.Task{Id: id, ServiceName: service, Slot: 1, Spec: spec},
		NodeID:  "isolation-node",
		Dir:     t.TempDir(),
		LogPath: filepath.Join(t.TempDir(), "replica.log"),
	}
	c, err := n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("prepare %s: %v", id, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Remove(ctx); err != nil {
			t.Errorf("remove %s: %v", id, err)
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	addr, err := c.Address(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := replica{service: service, ctl: c, addr: addr}
	waitServing(t, r)
	return r
}

// waitServing waits until the node itself gets the replica's page (the
// node is not a replica: isolation leaves it alone).
func waitServing(t *testing.T, r replica) {
	t.Helper()
	url := "http://" + r.addr + ":8080/"
	cl := http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := cl.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s replica at %s not serving the node within 20s: %v", r.service, url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reaches tells whether from gets to's page (an HTTP request made inside from).
func reaches(t *testing.T, from, to replica) bool {
	t.Helper()
	return reachesPort(t, from, to, 8080)
}

// reachesPort tells whether from gets the page at to's address and port.
func reachesPort(t *testing.T, from, to replica, port int) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// busybox-static's wget segfaults (glibc NSS); nc speaks HTTP by hand.
	script := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 %s %d | grep -q '^ok$'`, to.addr, port)
	code, err := from.ctl.Exec(ctx, []string{"sh", "-c", script})
	if err != nil {
		t.Fatalf("exec nc in %s: %v", from.service, err)
	}
	return code == 0
}

func TestContainersIsolatedByService(t *testing.T) {
	needRoot(t)
	n := newContainerNode(t)
	web1 := n.run(t, "web-1", "web", &api.ServiceSpec{DependsOn: []string{"db"}})
	web2 := n.run(t, "web-2", "web", &api.ServiceSpec{DependsOn: []string{"db"}})
	db := n.run(t, "db-1", "db", &api.ServiceSpec{})
	other := n.run(t, "other-1", "other", &api.ServiceSpec{})
	dns := n.run(t, "dns-1", "dns", &api.ServiceSpec{Network: &api.NetworkAccess{Open: true}})
	metrics := n.run(t, "metrics-1", "metrics", &api.ServiceSpec{Network: &api.NetworkAccess{AllowFrom: []string{"other"}}})

	cases := []struct {
		name     string
		from, to replica
		want     bool
	}{
		{"same service", web1, web2, true},
		{"dependent to its dependency", web1, db, true},
		{"dependency to its dependent", db, web1, false},
		{"unrelated service", other, web1, false},
		{"unrelated service, other way", web2, other, false},
		{"anyone to an open service", other, dns, true},
		{"open service to others", dns, db, false},
		{"allow_from names the source", other, metrics, true},
		{"allow_from names another service", web1, metrics, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reaches(t, c.from, c.to); got != c.want {
				t.Errorf("%s (%s) reaches %s (%s) = %v, want %v; ruleset members %v",
					c.from.service, c.from.addr, c.to.service, c.to.addr, got, c.want, n.iso.Members())
			}
		})
	}
}

// TestRuntimeRefusesReplicasWithoutIsolation: a runtime whose isolation
// did not load prepares no replica (the scheduler should not have sent
// one; if it did, the node still refuses).
func TestRuntimeRefusesReplicasWithoutIsolation(t *testing.T) {
	needRoot(t)
	d := containerdtest.Start(t)
	iso := New("jaco-unloaded") // never loaded: as after a failed Load
	rt, err := ctrd.New(context.Background(), d.Address(), ctrd.WithNodeID("unisolated-node"),
		ctrd.WithStateDir(filepath.Join(d.Dir(), "node")), ctrd.WithIsolation(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c, err := rt.Controller(exec.Replica{
		Task:    &api.Task{Id: "web-1", ServiceName: "web", Spec: &api.ServiceSpec{Image: testImage}},
		Dir:     t.TempDir(),
		LogPath: filepath.Join(t.TempDir(), "replica.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Prepare(context.Background())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Prepare on a node without isolation = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "runs no replicas") {
		t.Errorf("Prepare error %q does not say the node runs no replicas", err)
	}
}

// TestRemoveDetaches: a removed replica leaves the ruleset, so its address
// (which CNI may hand to the next replica) carries no old permissions.
func TestRemoveDetaches(t *testing.T) {
	needRoot(t)
	n := newContainerNode(t)
	a := n.run(t, "web-1", "web", &api.ServiceSpec{})
	n.run(t, "web-2", "web", &api.ServiceSpec{})
	if got := len(n.iso.Members()); got != 2 {
		t.Fatalf("members = %v, want 2", n.iso.Members())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.ctl.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if m := n.iso.Members(); len(m) != 1 || m[0].ReplicaID != "web-2" {
		t.Errorf("members after removing web-1 = %v, want only web-2", m)
	}
}

// TestPublishedPortsStayOpen: a published port answers the node and, via
// the node's address, a replica of an unrelated service, while that
// replica still cannot reach the service's replica directly.
func TestPublishedPortsStayOpen(t *testing.T) {
	needRoot(t)
	n := newContainerNode(t)
	const published = 18080
	web := n.run(t, "web-1", "web", &api.ServiceSpec{Ports: []*api.PortConfig{{TargetPort: 8080, PublishedPort: published,
		PublishMode: api.PublishMode_PUBLISH_MODE_HOST}}})
	other := n.run(t, "other-1", "other", &api.ServiceSpec{})
	if reaches(t, other, web) {
		t.Fatalf("other reaches web's replica directly; the published port test proves nothing")
	}
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/", published))
	if err != nil {
		t.Fatalf("node to published port: %v", err)
	}
	resp.Body.Close()
	gateway := n.rt.Names().Subnet.Addr().Next() // the bridge's address
	via := replica{service: "web via the node's published port", addr: gateway.String()}
	if !reachesPort(t, other, via, published) {
		t.Errorf("other cannot reach web's published port through the node's address %s", gateway)
	}
}
