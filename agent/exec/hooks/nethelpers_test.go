package hooks

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/netns"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/netattach"
	"github.com/jaco-project/jaco/internal/testenv"
)

var cniPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// fakeNetworks is the node's view: it knows the networks in it and, as
// the node does for a network it holds no block of yet, waits for the
// others until ctx ends.
type fakeNetworks map[string]exec.Attachment

func (f fakeNetworks) Attachment(ctx context.Context, name string) (exec.Attachment, error) {
	if att, ok := f[name]; ok {
		return att, nil
	}
	<-ctx.Done()
	return exec.Attachment{}, fmt.Errorf("no block of network %q: %w", name, ctx.Err())
}

// testAttachment is network "back" on this node: its block of the subnet,
// the bridge's address as gateway.
func testAttachment() exec.Attachment {
	return exec.Attachment{
		NetworkID: "n1",
		Network:   "back",
		Subnet:    netip.MustParsePrefix("198.18.0.0/16"),
		Block:     netip.MustParsePrefix("198.18.1.0/26"),
		Gateway:   netip.MustParseAddr("198.18.1.1"),
		Bridge:    "jh1",
		MTU:       1420,
	}
}

// netEnv is a node's overlay as the hooks runtime meets it: the view, the
// attacher with its leases, the directory of the replicas' namespaces.
// The tests run in a network namespace of their own (TestMain), so the
// bridge and the iptables rules of the plugins go with it.
type netEnv struct {
	att      exec.Attachment
	nets     fakeNetworks
	state    string
	netnsDir string
	attacher *netattach.Attacher
}

func newNetEnv(t *testing.T) *netEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "network namespaces need root")
	}
	for _, bin := range []string{"nsenter", "busybox", "ip"} {
		if _, err := osexec.LookPath(bin); err != nil {
			testenv.SkipOrFail(t, "%s missing: %v", bin, err)
		}
	}
	e := &netEnv{att: testAttachment(), state: t.TempDir(), netnsDir: t.TempDir()}
	e.nets = fakeNetworks{e.att.Network: e.att}
	e.attacher = e.newAttacher(t)
	// Before the temp dirs go (cleanups run last first): a namespace a
	// failed test left is still mounted.
	t.Cleanup(func() {
		entries, _ := os.ReadDir(e.netnsDir)
		for _, ent := range entries {
			_ = netns.LoadNetNS(filepath.Join(e.netnsDir, ent.Name())).Remove()
		}
		_ = osexec.Command("ip", "link", "del", e.att.Bridge).Run()
	})
	return e
}

// newAttacher is the attacher of a jacod: a restarted one finds the
// leases of the one before in the same state directory.
func (e *netEnv) newAttacher(t *testing.T) *netattach.Attacher {
	t.Helper()
	a, err := netattach.New(e.state, cniPluginDirs)
	if err != nil {
		testenv.SkipOrFail(t, "CNI plugins: %v", err)
	}
	return a
}

// runtime is a hooks runtime of a (new) jacod on this node.
func (e *netEnv) runtime(t *testing.T) *Runtime {
	return newRuntime(t, WithNetworks(e.nets, e.newAttacher(t), e.netnsDir))
}

// client is another namespace on the network (as a replica of another
// runtime would be).
func (e *netEnv) client(t *testing.T) string {
	t.Helper()
	ns, err := netns.NewNetNS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if _, err := e.attacher.Setup(ctx, "client", ns.GetPath(), 0, []exec.Attachment{e.att}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.attacher.Teardown(context.Background(), "client", ns.GetPath(), 0, []exec.Attachment{e.att})
		_ = ns.Remove()
	})
	return ns.GetPath()
}

// fetch gets http://addr:8080/ from the namespace ns.
func fetch(ns string, addr string) (string, error) {
	url := "http://" + netip.AddrPortFrom(netip.MustParseAddr(addr), 8080).String() + "/"
	// Not wget's -T: this busybox's wget crashes with it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, "nsenter", "--net="+ns, "--", "busybox", "wget", "-q", "-O", "-", url).CombinedOutput()
	return string(out), err
}

// waitFetch waits until the page at addr, fetched from ns, holds want.
func waitFetch(t *testing.T, ns, addr, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := fetch(ns, addr)
		if err == nil && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s:8080 from the client never held %q; last: %v: %s", addr, want, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// section returns the lines of log between the lines "== name" and the
// next "== ".
func section(log, name string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "== ") {
			in = line == "== "+name
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	return out
}

// interfaces are the names in /proc/net/dev output (its first two lines
// are headers).
func interfaces(lines []string) []string {
	var names []string
	for i, line := range lines {
		name, _, ok := strings.Cut(line, ":")
		if i < 2 || !ok {
			continue
		}
		names = append(names, strings.TrimSpace(name))
	}
	return names
}

// netReport is a shell function, report NAME, that prints what a process
// sees: its resolv.conf and its interfaces.
const netReport = `report() {
echo "== resolv $1"
cat /etc/resolv.conf
echo "== links $1"
cat /proc/net/dev
echo "== end $1"
}
`

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("address %q: %v", s, err)
	}
	return a
}
