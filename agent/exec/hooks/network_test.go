package hooks

import (
	"context"
	"errors"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// A replica on a network: an address in the node's block, served to
// another namespace on the network; launch and Exec see only that
// network and the node's DNS server; a restarted jacod adopts it, stops
// and removes it, giving back the lease and the namespace.
func TestReplicaOnNetwork(t *testing.T) {
	env := newNetEnv(t)
	launch := "#!/bin/sh\n" + netReport + `report launch
d=$(mktemp -d)
echo "hello from $JACO_REPLICA_ID" > "$d/index.html"
exec busybox httpd -f -p 8080 -h "$d"
`
	rep := newReplica(t, map[string]string{"launch": launch}, func(s *api.ServiceSpec) {
		s.Networks = []string{"back"}
	})
	c := controllerFor(t, env.runtime(t), rep)
	prepareAndStart(t, c)
	ctx := testContext(t)

	addr, err := c.Address(ctx)
	if err != nil {
		t.Fatalf("Address: %v", err)
	}
	if a := mustAddr(t, addr); !env.att.Block.Contains(a) || a == env.att.Gateway {
		t.Fatalf("Address = %s, want a host of block %s other than the gateway", addr, env.att.Block)
	}
	wantAddrs := []exec.NetworkAddress{{NetworkID: "n1", Addr: mustAddr(t, addr)}}
	checkAddresses(t, c, wantAddrs)

	client := env.client(t)
	waitFetch(t, client, addr, "hello from replica-1")

	waitLog(t, rep, "== end launch")
	log := readLog(t, rep)
	checkSandboxView(t, log, "launch", env.att)
	if host, _ := os.ReadFile(hostResolvConf); strings.Contains(string(host), env.att.Gateway.String()) {
		t.Errorf("the node's own resolv.conf names the replica's gateway:\n%s", host)
	}
	checkExecInSandbox(t, c, env.att)

	// jacod restarts: a new runtime, a new attacher on the same state.
	c2 := controllerFor(t, env.runtime(t), rep)
	if err := c2.Prepare(ctx); err != nil {
		t.Fatalf("Prepare of an adopted replica: %v", err)
	}
	if err := c2.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("Start of an adopted replica = %v, want ErrAlreadyStarted", err)
	}
	if got, err := c2.Address(ctx); err != nil || got != addr {
		t.Fatalf("adopted Address = %q, %v; want %s", got, err, addr)
	}
	checkAddresses(t, c2, wantAddrs)
	checkExecInSandbox(t, c2, env.att)
	waitFetch(t, client, addr, "hello from replica-1")

	if err := c2.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitExit(t, c2)
	var netnsPath string
	if st, ok, err := readRecord[netState](filepath.Join(rep.Dir, netFile)); err != nil || !ok {
		t.Fatalf("network state: %v %v", ok, err)
	} else {
		netnsPath = st.Netns
	}
	for range 2 { // a second Remove finds nothing left
		if err := c2.Remove(ctx); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	checkRemoved(t, env, rep, netnsPath, addr)
	if out, err := fetch(client, addr); err == nil {
		t.Errorf("GET %s after Remove answered: %s", addr, out)
	}
}

// finish runs in the namespace too, after launch ended on its own.
func TestFinishOnNetwork(t *testing.T) {
	env := newNetEnv(t)
	files := map[string]string{
		"launch": "#!/bin/sh\nexit 3\n",
		"finish": "#!/bin/sh\n" + netReport + "report finish\n",
	}
	rep := newReplica(t, files, func(s *api.ServiceSpec) { s.Networks = []string{"back"} })
	c := controllerFor(t, env.runtime(t), rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 3 {
		t.Fatalf("exit = %+v, want code 3", exit)
	}
	checkSandboxView(t, readLog(t, rep), "finish", env.att)
	addr, _ := c.Address(testContext(t))

	// The node reboots: the namespace's mount is gone, its file is left.
	st, _, err := readRecord[netState](filepath.Join(rep.Dir, netFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(st.Netns, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(testContext(t)); err != nil {
		t.Fatalf("Remove of a replica whose namespace is lost: %v", err)
	}
	checkRemoved(t, env, rep, st.Netns, addr)
}

// Prepare waits for the node to hold a block of the network only as long
// as its context, and leaves nothing behind when it gives up. A runtime
// without networks refuses the replica.
func TestPrepareWithoutAttachment(t *testing.T) {
	env := newNetEnv(t)
	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\nexit 0\n"}, func(s *api.ServiceSpec) {
		s.Networks = []string{"front"} // the node holds no block of it
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := controllerFor(t, env.runtime(t), rep).Prepare(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Prepare = %v, want the context's deadline", err)
	}
	if entries, _ := os.ReadDir(env.netnsDir); len(entries) > 0 {
		t.Errorf("namespaces left: %v", entries)
	}
	if fileExists(filepath.Join(rep.Dir, netFile)) {
		t.Errorf("network state written for a replica with no attachment")
	}

	if err := controllerFor(t, newRuntime(t), rep).Prepare(testContext(t)); !errors.Is(err, ErrNoNetworks) {
		t.Fatalf("Prepare without WithNetworks = %v, want ErrNoNetworks", err)
	}
}

// A replica without networks stays on the host: launch shares the
// runtime's network and mount namespaces.
func TestReplicaWithoutNetworksOnHost(t *testing.T) {
	env := newNetEnv(t)
	launch := "#!/bin/sh\necho \"net $(readlink /proc/self/ns/net)\"\necho \"mnt $(readlink /proc/self/ns/mnt)\"\n"
	rep := newReplica(t, map[string]string{"launch": launch}, nil)
	c := controllerFor(t, env.runtime(t), rep)
	prepareAndStart(t, c)
	waitExit(t, c)
	log := readLog(t, rep)
	for _, ns := range []string{"net", "mnt"} {
		self, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log, ns+" "+self+"\n") {
			t.Errorf("launch is not in the runtime's %s namespace %s:\n%s", ns, self, log)
		}
	}
	ctx := testContext(t)
	if addr, err := c.Address(ctx); err != nil || addr != "127.0.0.1" {
		t.Errorf("Address = %q, %v; want 127.0.0.1", addr, err)
	}
	if addrs, err := c.(exec.Networked).NetworkAddresses(ctx); err != nil || len(addrs) != 0 {
		t.Errorf("NetworkAddresses = %v, %v; want none", addrs, err)
	}
}

// checkSandboxView checks what the hook named name printed (netReport): a
// resolv.conf naming the gateway with ndots:0, and no interface but lo
// and the network's.
func checkSandboxView(t *testing.T, log, name string, att exec.Attachment) {
	t.Helper()
	resolv := strings.Join(section(log, "resolv "+name), "\n")
	if !strings.Contains(resolv, "nameserver "+att.Gateway.String()) || !strings.Contains(resolv, "options ndots:0") {
		t.Errorf("%s's resolv.conf:\n%s\nwant nameserver %s and options ndots:0", name, resolv, att.Gateway)
	}
	if got := interfaces(section(log, "links "+name)); !slices.Equal(sorted(got), []string{"eth0", "lo"}) {
		t.Errorf("%s's interfaces = %v, want eth0 and lo only", name, got)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// checkExecInSandbox runs commands through Exec that succeed only in the
// replica's namespace with its resolv.conf.
func checkExecInSandbox(t *testing.T, c exec.Controller, att exec.Attachment) {
	t.Helper()
	ctx := testContext(t)
	check := "grep -qx 'nameserver " + att.Gateway.String() + "' /etc/resolv.conf && grep -q eth0: /proc/net/dev && ! grep -q " + att.Bridge + ": /proc/net/dev"
	if code, err := c.Exec(ctx, []string{"/bin/sh", "-c", check}); err != nil || code != 0 {
		t.Errorf("Exec in the replica's namespace = %d, %v; want 0", code, err)
	}
}

func checkAddresses(t *testing.T, c exec.Controller, want []exec.NetworkAddress) {
	t.Helper()
	got, err := c.(exec.Networked).NetworkAddresses(testContext(t))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("NetworkAddresses = %v, %v; want %v", got, err, want)
	}
}

// checkRemoved checks that Remove left nothing: the namespace (when
// known), the lease of addr, the replica's veth on the bridge, the state.
func checkRemoved(t *testing.T, env *netEnv, rep exec.Replica, netnsPath, addr string) {
	t.Helper()
	if netnsPath != "" && fileExists(netnsPath) {
		t.Errorf("namespace %s left after Remove", netnsPath)
	}
	if entries, _ := os.ReadDir(env.netnsDir); len(entries) > 0 {
		t.Errorf("namespaces left after Remove: %v", entries)
	}
	if leases, _ := filepath.Glob(filepath.Join(env.state, "ipam", "*", addr)); len(leases) > 0 {
		t.Errorf("lease of %s left after Remove: %v", addr, leases)
	}
	for _, name := range []string{netFile, resolvFile, bundleDir} {
		if fileExists(filepath.Join(rep.Dir, name)) {
			t.Errorf("%s left after Remove", name)
		}
	}
}

// A replica on two networks gets an interface and an address on each, in
// the spec's order; its Address is the first network's, its resolv.conf
// names the first network's gateway.
func TestReplicaOnTwoNetworks(t *testing.T) {
	env := newNetEnv(t)
	front := testAttachment()
	front.NetworkID, front.Network, front.Bridge = "n2", "front", "jh2"
	front.Subnet = netip.MustParsePrefix("10.20.0.0/16")
	front.Block = netip.MustParsePrefix("10.20.1.0/26")
	front.Gateway = netip.MustParseAddr("10.20.1.1")
	env.nets[front.Network] = front
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", front.Bridge).Run() })

	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n" + netReport + "report launch\n"}, func(s *api.ServiceSpec) {
		s.Networks = []string{"front", "back"}
	})
	c := controllerFor(t, env.runtime(t), rep)
	prepareAndStart(t, c)
	waitExit(t, c)
	ctx := testContext(t)
	got, err := c.(exec.Networked).NetworkAddresses(ctx)
	if err != nil || len(got) != 2 || got[0].NetworkID != "n2" || !front.Block.Contains(got[0].Addr) ||
		got[1].NetworkID != "n1" || !env.att.Block.Contains(got[1].Addr) {
		t.Fatalf("NetworkAddresses = %v, %v; want one in %s then one in %s", got, err, front.Block, env.att.Block)
	}
	if addr, err := c.Address(ctx); err != nil || addr != got[0].Addr.String() {
		t.Errorf("Address = %q, %v; want the first network's %s", addr, err, got[0].Addr)
	}
	log := readLog(t, rep)
	if ifs := interfaces(section(log, "links launch")); !slices.Equal(sorted(ifs), []string{"eth0", "eth1", "lo"}) {
		t.Errorf("interfaces = %v, want eth0, eth1 and lo", ifs)
	}
	if resolv := strings.Join(section(log, "resolv launch"), "\n"); !strings.Contains(resolv, "nameserver "+front.Gateway.String()) {
		t.Errorf("resolv.conf:\n%s\nwant the first network's gateway %s", resolv, front.Gateway)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, a := range got {
		if leases, _ := filepath.Glob(filepath.Join(env.state, "ipam", "*", a.Addr.String())); len(leases) > 0 {
			t.Errorf("lease of %s left after Remove: %v", a.Addr, leases)
		}
	}
}
