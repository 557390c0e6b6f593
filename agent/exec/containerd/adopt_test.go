package containerd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// A Runtime made afresh (the agent restarted) adopts a running replica:
// Prepare and Start do not make a second one, Address and Exec work, and
// Wait reports how it ends.
func TestAdoptRunningReplica(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-adopt")
	rep := replica(t, n.id, "task-adopt-1", &api.ServiceSpec{
		Command: []string{"sh", "-c", `trap 'exit 7' INT; echo ready; while :; do sleep 1 & wait $!; done`},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitLog(t, rep, "ready")
	addr, err := first.Address(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.rt.Close(); err != nil { // the old agent is gone
		t.Fatal(err)
	}

	rt := n.open(t)
	c, err := rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background()) })
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("prepare of an adopted replica: %v", err)
	}
	if err := c.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("start of an adopted replica = %v, want ErrAlreadyStarted", err)
	}
	if got, err := c.Address(ctx); err != nil || got != addr {
		t.Fatalf("address after adoption = %q, %v; want %s", got, err, addr)
	}
	if code, err := c.Exec(ctx, []string{"true"}); err != nil || code != 0 {
		t.Fatalf("exec after adoption = %d, %v", code, err)
	}
	waited := make(chan exec.Exit, 1)
	go func() {
		e, err := c.Wait(ctx)
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		waited <- e
	}()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case e := <-waited:
		if e.Code != 7 {
			t.Fatalf("exit %+v, want code 7", e)
		}
	case <-ctx.Done():
		t.Fatal("Wait did not return after Stop")
	}
	// Ended, not removed: Start still does not start it again.
	if err := c.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("start of an ended replica = %v, want ErrAlreadyStarted", err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatal(err)
	}
}

// Two nodes on one machine and one containerd, with ids whose derived
// names differ, run a replica with the same task id side by side; each
// serves on its own published port, and removing one leaves the other.
func TestTwoNodesSideBySide(t *testing.T) {
	a, b := "node-a", "node-b"
	na, _ := NamesFor(a, "")
	nb, _ := NamesFor(b, "")
	if na.Namespace == nb.Namespace || na.Bridge == nb.Bridge || na.Network == nb.Network || na.Subnet.Overlaps(nb.Subnet) {
		t.Fatalf("names of %s and %s collide: %+v %+v", a, b, na, nb)
	}
	d := containerdtest.Start(t)
	nodes := []*node{newNode(t, d, a), newNode(t, d, b)}
	var ctrls []exec.Controller
	var ports []uint32
	for _, n := range nodes {
		port := freePort(t)
		rep := replica(t, n.id, "task-shared-1", &api.ServiceSpec{
			Command: []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"},
			Ports:   []*api.PortConfig{{TargetPort: 8080, PublishedPort: port, PublishMode: api.PublishMode_PUBLISH_MODE_HOST}},
		})
		ctrls = append(ctrls, start(t, n.rt, rep))
		ports = append(ports, port)
	}
	for i, c := range ctrls {
		addr, err := c.Address(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !nodes[i].rt.Names().Subnet.Contains(netip.MustParseAddr(addr)) {
			t.Errorf("node %s: address %s outside %s", nodes[i].id, addr, nodes[i].rt.Names().Subnet)
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[i])
		waitfor.Holds(t, 20*time.Second, "GET "+url, func() (bool, string) { return get(url) })
	}
	if err := ctrls[0].Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[1])
	if ok, got := get(url); !ok {
		t.Fatalf("node b after node a's replica was removed: %s", got)
	}
	// A third node told to take node a's subnet is refused: its bridge
	// would fight a's over routes.
	_, err := New(context.Background(), d.Address(), WithNodeID("node-c"), WithSubnet(na.Subnet.String()),
		WithStateDir(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("New with an overlapping subnet = %v, want an overlap error", err)
	}
}

// An image the node lacks is pulled; with no registry the error says what
// to do instead.
func TestMissingImageErrorSaysLoad(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-pull")
	rep := replica(t, n.id, "task-pull-1", &api.ServiceSpec{Image: "jaco.invalid/nothing:1"})
	c, err := n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.Prepare(ctx)
	if err == nil || !strings.Contains(err.Error(), "jaco image load") {
		t.Fatalf("prepare with a missing image = %v; want an error naming `jaco image load`", err)
	}
}
