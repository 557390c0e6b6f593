package netattach

import (
	"context"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/netns"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/testenv"
)

// The tests make bridges, links and iptables rules: they run in a network
// namespace of their own (as root), which takes all of it along when they
// end.
func TestMain(m *testing.M) { os.Exit(containerdtest.RunIsolated(m)) }

var pluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func run(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := osexec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
	return string(out)
}

// inNetns runs argv in the network namespace at ns.
func inNetns(ns string, argv ...string) (string, error) {
	out, err := osexec.Command("nsenter", append([]string{"--net=" + ns, "--"}, argv...)...).CombinedOutput()
	return string(out), err
}

// root skips (fails in CI) unless the test can make namespaces and links.
func root(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "attaching namespaces needs root")
	}
	for _, bin := range []string{"nsenter", "/bin/busybox"} {
		if _, err := osexec.LookPath(bin); err != nil {
			testenv.SkipOrFail(t, "%s missing: %v", bin, err)
		}
	}
}

// addJaco0 makes the stand-in for the node's WireGuard link, a TUN device
// as wireguard-go makes (in the tests' own network namespace), holding the
// gateway as a /32 with the network's subnet routed to it, as the node's
// overlay does.
func addJaco0(t *testing.T, att exec.Attachment) {
	t.Helper()
	run(t, "ip", "tuntap", "add", "jaco0", "mode", "tun")
	run(t, "ip", "addr", "add", att.Gateway.String()+"/32", "dev", "jaco0")
	run(t, "ip", "link", "set", "jaco0", "up")
	run(t, "ip", "route", "add", att.Subnet.String(), "dev", "jaco0", "src", att.Gateway.String())
}

func newNetns(t *testing.T) string {
	t.Helper()
	ns, err := netns.NewNetNS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Remove() })
	return ns.GetPath()
}

// Two namespaces on one network get addresses from the node's block, reach
// each other and the gateway, and route the rest of the subnet through the
// gateway. The gateway address also sits as a /32 on the node's WireGuard
// link with the subnet routed there (as the node's overlay does): the
// bridge's /26 coexists with it and takes the block's traffic, the link
// the rest. Teardown frees the lease and the interface, also once the
// namespace is gone.
func TestSetupTwoNamespacesOnOneNetwork(t *testing.T) {
	root(t)
	att := testAttachment()
	addJaco0(t, att)
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", "jaco0").Run() })
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", att.Bridge).Run() })

	state := t.TempDir()
	a, err := New(state, pluginDirs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nsA, nsB := newNetns(t), newNetns(t)
	atts := []exec.Attachment{att}
	addrA, err := a.Setup(ctx, "ctr-a", nsA, 0, atts)
	if err != nil {
		t.Fatal(err)
	}
	addrB, err := a.Setup(ctx, "ctr-b", nsB, 0, atts)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range [][]exec.NetworkAddress{addrA, addrB} {
		if len(got) != 1 || got[0].NetworkID != att.NetworkID || !att.Block.Contains(got[0].Addr) || got[0].Addr == att.Gateway {
			t.Fatalf("addresses %+v: want one host of %s other than the gateway", got, att.Block)
		}
	}
	if addrA[0].Addr == addrB[0].Addr {
		t.Fatalf("both namespaces got %s", addrA[0].Addr)
	}

	// The node: the block on the bridge, the rest of the subnet on jaco0,
	// which keeps its /32.
	if out := run(t, "ip", "-4", "addr", "show", "dev", att.Bridge); !strings.Contains(out, att.Gateway.String()+"/26") {
		t.Errorf("bridge addresses: %s", out)
	}
	if out := run(t, "ip", "-4", "addr", "show", "dev", "jaco0"); !strings.Contains(out, att.Gateway.String()+"/32") {
		t.Errorf("jaco0 addresses: %s", out)
	}
	if out := run(t, "ip", "route", "get", addrB[0].Addr.String()); !strings.Contains(out, "dev "+att.Bridge) {
		t.Errorf("route to a local replica: %s", out)
	}
	if out := run(t, "ip", "route", "get", "10.9.7.7"); !strings.Contains(out, "dev jaco0") || !strings.Contains(out, "src "+att.Gateway.String()) {
		t.Errorf("route to another node's block: %s", out)
	}

	// The namespace: its interface, MTU and route to the subnet.
	if out, err := inNetns(nsA, "ip", "-4", "addr", "show", "dev", "eth0"); err != nil || !strings.Contains(out, addrA[0].Addr.String()+"/26") || !strings.Contains(out, "mtu 1420") {
		t.Errorf("eth0 in a: %v: %s", err, out)
	}
	if out, err := inNetns(nsA, "ip", "route", "get", "10.9.7.7"); err != nil || !strings.Contains(out, "via "+att.Gateway.String()+" dev eth0") {
		t.Errorf("route in a to the subnet: %v: %s", err, out)
	}
	if out, err := inNetns(nsA, "ip", "route", "get", "198.18.99.1"); err == nil {
		t.Errorf("route in a outside the subnet: %s; want none (no default route from an overlay)", out)
	}
	for _, dst := range []netip.Addr{addrB[0].Addr, att.Gateway} {
		if out, err := inNetns(nsA, "/bin/busybox", "ping", "-c", "1", "-W", "2", dst.String()); err != nil {
			t.Errorf("ping %s from a: %v: %s", dst, err, out)
		}
	}

	// jaco0 going away (wireguard-go restarting) takes its /32 along, not
	// the bridge's: the replicas still reach the gateway (the node's DNS).
	// Made again, it holds the gateway beside the bridge once more.
	run(t, "ip", "link", "del", "jaco0")
	if out, err := inNetns(nsB, "/bin/busybox", "ping", "-c", "1", "-W", "2", att.Gateway.String()); err != nil {
		t.Errorf("ping the gateway from b without jaco0: %v: %s", err, out)
	}
	addJaco0(t, att)
	if out := run(t, "ip", "route", "get", "10.9.7.7"); !strings.Contains(out, "dev jaco0") {
		t.Errorf("route to another node's block after jaco0 came back: %s", out)
	}
	if out, err := inNetns(nsB, "/bin/busybox", "ping", "-c", "1", "-W", "2", addrA[0].Addr.String()); err != nil {
		t.Errorf("ping a from b after jaco0 came back: %v: %s", err, out)
	}

	lease := func(addr netip.Addr) string {
		return filepath.Join(state, "ipam", cniName(att.NetworkID), addr.String())
	}
	if _, err := os.Stat(lease(addrA[0].Addr)); err != nil {
		t.Fatalf("lease of a: %v", err)
	}
	for range 2 { // a second teardown finds nothing to do
		if err := a.Teardown(ctx, "ctr-a", nsA, 0, atts); err != nil {
			t.Fatalf("teardown a: %v", err)
		}
	}
	if _, err := os.Stat(lease(addrA[0].Addr)); !os.IsNotExist(err) {
		t.Errorf("lease of a after teardown: %v", err)
	}
	if out, err := inNetns(nsA, "ip", "link", "show", "eth0"); err == nil {
		t.Errorf("eth0 in a after teardown: %s", out)
	}

	// b's namespace goes first (a replica whose namespace was lost): the
	// lease is still freed.
	if err := netns.LoadNetNS(nsB).Remove(); err != nil {
		t.Fatal(err)
	}
	if err := a.Teardown(ctx, "ctr-b", nsB, 0, atts); err != nil {
		t.Fatalf("teardown b without its namespace: %v", err)
	}
	if _, err := os.Stat(lease(addrB[0].Addr)); !os.IsNotExist(err) {
		t.Errorf("lease of b after teardown: %v", err)
	}
}

// Interfaces are numbered from first, in the order of the attachments; a
// failing attachment leaves nothing of the earlier ones behind.
func TestSetupNumbersInterfacesAndUndoesOnFailure(t *testing.T) {
	root(t)
	one := testAttachment()
	two := testAttachment()
	two.NetworkID, two.Network, two.Bridge = "n2", "front", "jn2"
	two.Subnet = netip.MustParsePrefix("10.10.0.0/16")
	two.Block = netip.MustParsePrefix("10.10.1.0/26")
	two.Gateway = netip.MustParseAddr("10.10.1.1")
	for _, br := range []string{one.Bridge, two.Bridge} {
		t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", br).Run() })
	}
	state := t.TempDir()
	a, err := New(state, pluginDirs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := newNetns(t)
	addrs, err := a.Setup(ctx, "ctr", ns, 1, []exec.Attachment{one, two})
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 2 || addrs[0].NetworkID != one.NetworkID || addrs[1].NetworkID != two.NetworkID || !two.Block.Contains(addrs[1].Addr) {
		t.Fatalf("addresses %+v", addrs)
	}
	for i, want := range []netip.Addr{addrs[0].Addr, addrs[1].Addr} {
		if out, err := inNetns(ns, "ip", "-4", "addr", "show", "dev", IfName(1, i)); err != nil || !strings.Contains(out, want.String()) {
			t.Errorf("%s: %v: %s", IfName(1, i), err, out)
		}
	}
	if err := a.Teardown(ctx, "ctr", ns, 1, []exec.Attachment{one, two}); err != nil {
		t.Fatal(err)
	}

	// A bridge name that is a veth already: the second attachment fails,
	// and the first one's lease goes with it.
	run(t, "ip", "link", "add", "jnbad", "type", "veth", "peer", "name", "jnbad-peer")
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", "jnbad").Run() })
	two.Bridge = "jnbad"
	if _, err := a.Setup(ctx, "ctr2", ns, 1, []exec.Attachment{one, two}); err == nil {
		t.Fatal("setup onto a non-bridge succeeded")
	}
	leases, _ := filepath.Glob(filepath.Join(state, "ipam", "*", "10.*"))
	if len(leases) != 0 {
		t.Errorf("leases after a failed setup: %v", leases)
	}
	if out, err := inNetns(ns, "ip", "link", "show", "eth1"); err == nil {
		t.Errorf("eth1 after a failed setup: %s", out)
	}
}
