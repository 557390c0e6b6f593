package containerd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// fakeNetworks is the node's view of its networks: attachments by name; a
// name it lacks waits for ctx (no block yet); with fail set every call
// fails (the view is gone).
type fakeNetworks struct {
	atts map[string]exec.Attachment
	fail bool
}

func (f *fakeNetworks) Attachment(ctx context.Context, name string) (exec.Attachment, error) {
	if f.fail {
		return exec.Attachment{}, errors.New("no view of the networks")
	}
	if att, ok := f.atts[name]; ok {
		return att, nil
	}
	<-ctx.Done()
	return exec.Attachment{}, fmt.Errorf("wait for a block of %q: %w", name, ctx.Err())
}

// backend is the test's overlay network (inside the tests' own network
// namespace, see TestMain), with its bridge deleted when t ends.
func backend(t *testing.T) exec.Attachment {
	att := exec.Attachment{
		NetworkID: "netbackend0000000000000001",
		Network:   "backend",
		Subnet:    netip.MustParsePrefix("10.77.0.0/16"),
		Block:     netip.MustParsePrefix("10.77.0.64/26"),
		Gateway:   netip.MustParseAddr("10.77.0.65"),
		Bridge:    "jntestbackend",
		MTU:       1420,
	}
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", att.Bridge).Run() })
	return att
}

func httpdOn(networks ...string) *api.ServiceSpec {
	return &api.ServiceSpec{
		Command:  []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"},
		Networks: networks,
	}
}

// execOK runs argv in the replica and reports whether it exited 0.
func execOK(t *testing.T, c exec.Controller, argv ...string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := c.Exec(ctx, argv)
	if err != nil {
		t.Fatalf("exec %v: %v", argv, err)
	}
	return code == 0
}

func networkAddr(t *testing.T, c exec.Controller, att exec.Attachment) netip.Addr {
	t.Helper()
	got, err := c.(exec.Networked).NetworkAddresses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].NetworkID != att.NetworkID || !att.Block.Contains(got[0].Addr) || got[0].Addr == att.Gateway {
		t.Fatalf("network addresses %+v: want one host of %s on %s", got, att.Block, att.NetworkID)
	}
	return got[0].Addr
}

// Two replicas on one overlay network get addresses from the node's block
// on eth1 beside eth0, reach each other's HTTP server on them, and resolve
// through the gateway; a replica on no network keeps eth0 alone. Removing
// a replica frees its lease; a restarted agent with no view of the
// networks still reports and tears down what a replica recorded.
func TestOverlayNetworkReplicas(t *testing.T) {
	d := containerdtest.Start(t)
	att := backend(t)
	nets := &fakeNetworks{atts: map[string]exec.Attachment{"backend": att}}
	n := newNode(t, d, "node-overlay", WithNetworks(nets))
	repA := replica(t, n.id, "task-ov-a", httpdOn("backend"))
	repB := replica(t, n.id, "task-ov-b", httpdOn("backend"))
	a, b := start(t, n.rt, repA), start(t, n.rt, repB)
	addrA, addrB := networkAddr(t, a, att), networkAddr(t, b, att)
	if addrA == addrB {
		t.Fatalf("both replicas got %s", addrA)
	}

	for _, p := range []struct {
		from exec.Controller
		to   netip.Addr
	}{{a, addrB}, {b, addrA}} {
		url := fmt.Sprintf("http://%s:8080/index.html", p.to)
		waitfor.Holds(t, 20*time.Second, "GET "+url+" from the other replica", func() (bool, string) {
			return execOK(t, p.from, "wget", "-q", "-O", "/dev/null", url), "wget failed"
		})
	}
	if !execOK(t, a, "sh", "-c", fmt.Sprintf("ip -4 addr show dev eth1 | grep -q 'inet %s/26' && ip -4 addr show dev eth0 | grep -q inet", addrA)) {
		t.Error("replica a lacks eth1 with its network address, or eth0")
	}
	if !execOK(t, a, "sh", "-c", "test \"$(cat /etc/resolv.conf)\" = \"$(printf 'nameserver 10.77.0.65\\noptions ndots:0')\"") {
		t.Error("/etc/resolv.conf is not the gateway's nameserver with ndots:0")
	}
	if execOK(t, a, "sh", "-c", "echo nameserver 8.8.8.8 >> /etc/resolv.conf") {
		t.Error("/etc/resolv.conf is writable in the replica")
	}

	plain := start(t, n.rt, replica(t, n.id, "task-ov-plain", httpdOn()))
	if got, err := plain.(exec.Networked).NetworkAddresses(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("network addresses of a replica on no network = %v, %v", got, err)
	}
	if !execOK(t, plain, "ip", "link", "show", "eth0") || execOK(t, plain, "ip", "link", "show", "eth1") {
		t.Error("a replica on no network: want eth0 and no eth1")
	}
	if execOK(t, plain, "grep", "-q", att.Gateway.String(), "/etc/resolv.conf") {
		t.Error("a replica on no network got the overlay's resolv.conf")
	}

	lease := func(addr netip.Addr) string {
		return filepath.Join(n.stateDir, "overlay", "ipam", "jaco-net-"+att.NetworkID, addr.String())
	}
	if _, err := os.Stat(lease(addrA)); err != nil {
		t.Fatalf("lease of a: %v", err)
	}
	if err := a.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lease(addrA)); !os.IsNotExist(err) {
		t.Errorf("lease of a after Remove: %v", err)
	}

	// The agent restarts and its node has no view of the networks yet.
	// (The old Runtime stays open: the test's cleanups remove through it.)
	rt := n.open(t, WithNetworks(&fakeNetworks{fail: true}))
	adopted, err := rt.Controller(repB)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adopted.Prepare(ctx); err != nil {
		t.Fatalf("prepare of an adopted replica: %v", err)
	}
	if err := adopted.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("start of an adopted replica = %v, want ErrAlreadyStarted", err)
	}
	if got := networkAddr(t, adopted, att); got != addrB {
		t.Errorf("adopted replica's address %s, want %s", got, addrB)
	}
	if err := adopted.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lease(addrB)); !os.IsNotExist(err) {
		t.Errorf("lease of b after Remove by the restarted agent: %v", err)
	}
	if got, err := adopted.(exec.Networked).NetworkAddresses(ctx); err != nil || len(got) != 0 {
		t.Errorf("network addresses after Remove = %v, %v", got, err)
	}
}

// A spec naming networks is refused by a runtime without WithNetworks,
// leaving nothing behind; waiting for a block ends with Prepare's context,
// and a replica prepared but never started is removed with its lease-less
// attachments.
func TestOverlayPrepareRefusalsAndWaits(t *testing.T) {
	d := containerdtest.Start(t)
	att := backend(t)
	plain := newNode(t, d, "node-ov-plain")
	rep := replica(t, plain.id, "task-ov-refused", httpdOn("backend"))
	c, err := plain.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Prepare(ctx); err == nil || !strings.Contains(err.Error(), "no overlay networks") {
		t.Fatalf("prepare without WithNetworks = %v, want a refusal naming overlay networks", err)
	}
	if _, err := plain.rt.Client().LoadContainer(ctx, "task-ov-refused"); !errdefs.IsNotFound(err) {
		t.Errorf("container after a refusal: %v", err)
	}
	if ents, _ := os.ReadDir(rep.Dir); len(ents) != 0 {
		t.Errorf("replica dir after a refusal holds %d entries", len(ents))
	}

	n := newNode(t, d, "node-ov-wait", WithNetworks(&fakeNetworks{atts: map[string]exec.Attachment{"backend": att}}))
	rep = replica(t, n.id, "task-ov-wait", httpdOn("backend", "frontend"))
	c, err = n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := c.Prepare(short); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "frontend") {
		t.Fatalf("prepare waiting for a block = %v, want the deadline, naming the network", err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("remove after a timed-out prepare: %v", err)
	}

	rep = replica(t, n.id, "task-ov-prep", httpdOn("backend"))
	c, err = n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := c.(exec.Networked).NetworkAddresses(ctx); err != nil || len(got) != 0 {
		t.Errorf("network addresses before Start = %v, %v", got, err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("remove after prepare only: %v", err)
	}
	if ents, _ := os.ReadDir(rep.Dir); len(ents) != 0 {
		t.Errorf("replica dir after Remove holds %d entries", len(ents))
	}
}
