package overlay

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOverlay runs two nodes, each in its own network namespace and
// process, joined by a veth underlay, and checks the link end to end:
// traffic crosses encrypted, follows the peer list, and Peers reports it.
// wireguard-go always runs; the kernel's WireGuard where the kernel has it
// (this project's CI machine does not).
func TestOverlay(t *testing.T) {
	requireNetns(t)
	t.Run("userspace", func(t *testing.T) { testOverlay(t, KindUserspace) })
	t.Run("kernel", func(t *testing.T) { testOverlay(t, KindKernel) })
}

// TestOpenPicksKind checks that Open takes the kernel's WireGuard exactly
// when the kernel can make a wireguard link, and that a kernel link asked
// of a kernel without WireGuard fails leaving nothing behind.
func TestOpenPicksKind(t *testing.T) {
	requireNetns(t)
	ns, _ := underlay(t)
	n := startHelper(t, "auto", ns)
	r := n.do(helperCmd{Op: "open"})
	want := map[bool]Kind{true: KindKernel, false: KindUserspace}[r.Kernel]
	t.Logf("kernel WireGuard: %v; Open picked %s", r.Kernel, r.Kind)
	if r.Kind != want {
		t.Errorf("Open picked %s, want %s", r.Kind, want)
	}
	n.do(helperCmd{Op: "close"})
	if r.Kernel {
		return
	}
	n = startHelper(t, "kernel", ns)
	if r := n.call(helperCmd{Op: "open", Kind: KindKernel}); !strings.HasPrefix(r.Err, ErrUnavailable.Error()) {
		t.Fatalf("a kernel link on a kernel without WireGuard: %q, want %v", r.Err, ErrUnavailable)
	}
	if r := n.call(helperCmd{Op: "inspect"}); r.Err == "" {
		t.Errorf("a failed kernel Open left %s: %+v", DefaultName, r.Iface)
	}
}

func testOverlay(t *testing.T, kind Kind) {
	nsA, nsB := underlay(t)
	if kind == KindKernel {
		probe := exec.Command("ip", "-n", nsA, "link", "add", "jacoprobe", "type", "wireguard")
		if out, err := probe.CombinedOutput(); err != nil {
			// Not SkipOrFail: a kernel without WireGuard is a supported
			// machine (the userspace subtest covers it), CI's among them.
			t.Skipf("this kernel has no WireGuard (%v: %s)", err, bytes.TrimSpace(out))
		}
		ipCmd(t, "-n", nsA, "link", "del", "jacoprobe")
	}
	a, b := startNode(t, "a", nsA, kind), startNode(t, "b", nsB, kind)
	if a.kind != kind || b.kind != kind {
		t.Fatalf("opened %s and %s, want %s", a.kind, b.kind, kind)
	}

	// One network, 198.19.0.0/16, routed on both; A holds its block
	// 198.19.1.0/26 (address .1), B its block 198.19.2.0/26.
	subnet := netip.MustParsePrefix("198.19.0.0/16")
	blockA, blockB := netip.MustParsePrefix("198.19.1.0/26"), netip.MustParsePrefix("198.19.2.0/26")
	cfgA := wireConfig{Addresses: []netip.Prefix{netip.MustParsePrefix("198.19.1.1/32")},
		Routes: []Route{{Dst: subnet, Src: netip.MustParseAddr("198.19.1.1")}},
		Peers:  []Peer{{PublicKey: b.pub, Endpoint: "198.18.0.2:" + strconv.Itoa(DefaultListenPort), Allowed: []netip.Prefix{blockB}}}}
	cfgB := wireConfig{Addresses: []netip.Prefix{netip.MustParsePrefix("198.19.2.1/32")},
		Routes: []Route{{Dst: subnet, Src: netip.MustParseAddr("198.19.2.1")}},
		Peers:  []Peer{{PublicKey: a.pub, Endpoint: "198.18.0.1:" + strconv.Itoa(DefaultListenPort), Allowed: []netip.Prefix{blockA}}}}
	a.do(helperCmd{Op: "configure", Config: cfgA})
	b.do(helperCmd{Op: "configure", Config: cfgB})
	for _, n := range []*node{a, b} {
		addr := map[*node]string{a: "198.19.1.1", b: "198.19.2.1"}[n]
		n.do(helperCmd{Op: "serve", Addr: addr + ":7000"})
		n.do(helperCmd{Op: "serve", Addr: addr + ":7002"})
	}
	b.do(helperCmd{Op: "serve", Addr: "198.18.0.2:7001"}) // in clear, on the underlay
	// The veth's MTU is 1500: the link's is 1420. The network's subnet is
	// routed through it, from the node's address in the network.
	st := a.do(helperCmd{Op: "inspect"}).Iface
	if st.MTU != 1500-Overhead || !st.Up || !slices.Equal(st.Addrs, []string{"198.19.1.1/32"}) ||
		!slices.Equal(st.Routes, []string{"198.19.0.0/16 198.19.1.1"}) {
		t.Errorf("a's interface: %+v", st)
	}

	// Both ways over the overlay, with the underlay captured on A's side.
	secret := marker(t, "SECRET")
	a.do(helperCmd{Op: "capture-start", Iface: "eth0"})
	reply, err := a.dialUntil("198.19.2.1:7000", secret, 10*time.Second)
	if err != nil || reply != secret+"/ack" {
		t.Fatalf("a → b over the overlay: reply %q, %v", reply, err)
	}
	if reply, err := b.dialUntil("198.19.1.1:7000", secret+"-back", 10*time.Second); err != nil || reply != secret+"-back/ack" {
		t.Fatalf("b → a over the overlay: reply %q, %v", reply, err)
	}
	got := a.do(helperCmd{Op: "capture-stop", Msg: secret}).Capture
	t.Logf("overlay capture: %+v", got)
	if got.WireGuard == 0 || got.SawMarker || got.Overflowed {
		t.Errorf("underlay capture of overlay traffic: %+v; want WireGuard frames and no plaintext", got)
	}
	// The capture does see plaintext when there is some: the same kind of
	// exchange in clear on the underlay shows the marker.
	plain := marker(t, "CLEAR")
	a.do(helperCmd{Op: "capture-start", Iface: "eth0"})
	if reply, err := a.dialUntil("198.18.0.2:7001", plain, 5*time.Second); err != nil || reply != plain+"/ack" {
		t.Fatalf("a → b on the underlay: reply %q, %v", reply, err)
	}
	if got := a.do(helperCmd{Op: "capture-stop", Msg: plain}).Capture; !got.SawMarker {
		t.Fatalf("the capture missed a plaintext marker sent in clear: %+v", got)
	}

	// Peers reports the session.
	ps := a.peers()
	if len(ps) != 1 {
		t.Fatalf("a's peers: %+v", ps)
	}
	p := ps[0]
	if p.PublicKey != b.pub || p.Endpoint.String() != "198.18.0.2:"+strconv.Itoa(DefaultListenPort) || p.RxBytes == 0 || p.TxBytes == 0 ||
		time.Since(p.LastHandshake) > time.Minute || len(p.AllowedPrefixes) != 1 ||
		p.AllowedPrefixes[0] != blockB {
		t.Errorf("a's peer b: %+v", p)
	}

	// The same configuration again keeps the session: no new handshake.
	a.do(helperCmd{Op: "configure", Config: cfgA})
	if again := a.peers(); len(again) != 1 || !again[0].LastHandshake.Equal(p.LastHandshake) {
		t.Errorf("reconfiguring the same peers reset the session: %+v, was %+v", again, p)
	}
	if reply, err := a.dialUntil("198.19.2.1:7000", "still", 5*time.Second); err != nil || reply != "still/ack" {
		t.Errorf("after the same Configure: %q, %v", reply, err)
	}

	// Measured on demand only: numbers from a -race build mean little.
	if os.Getenv("JACO_OVERLAY_MEASURE") != "" {
		for _, to := range []string{"198.19.2.1:7002", "198.18.0.2:7001"} {
			r := a.do(helperCmd{Op: "throughput", Addr: to, Bytes: 32 << 20})
			t.Logf("throughput a → %s: %.0f Mbit/s", to, r.Mbps)
			r = a.do(helperCmd{Op: "rtt", Addr: to, Bytes: 2000})
			t.Logf("round trip a → %s: p50 %v p99 %v", to, r.RTT[0], r.RTT[1])
		}
	}

	// B removed from A's peers: neither way gets through, within a deadline.
	removed := cfgA
	removed.Peers = nil
	a.do(helperCmd{Op: "configure", Config: removed})
	if ps := a.peers(); len(ps) != 0 {
		t.Errorf("a's peers after removing b: %+v", ps)
	}
	if r := a.call(helperCmd{Op: "dial", Addr: "198.19.2.1:7000", Msg: "x", Timeout: 2 * time.Second}); r.Err == "" {
		t.Errorf("a reached b after removing it: %q", r.Reply)
	}
	if r := b.call(helperCmd{Op: "dial", Addr: "198.19.1.1:7000", Msg: "x", Timeout: 2 * time.Second}); r.Err == "" {
		t.Errorf("b reached a after a removed it: %q", r.Reply)
	}

	// Added back: reachable again.
	a.do(helperCmd{Op: "configure", Config: cfgA})
	if reply, err := a.dialUntil("198.19.2.1:7000", "back", 15*time.Second); err != nil || reply != "back/ack" {
		t.Errorf("a → b after adding b back: %q, %v", reply, err)
	}
	if reply, err := b.dialUntil("198.19.1.1:7000", "back", 15*time.Second); err != nil || reply != "back/ack" {
		t.Errorf("b → a after a added b back: %q, %v", reply, err)
	}

	// jaco0 deleted behind the link's back: the next Configure makes it
	// again (the old device stopped; the close check at the end sees no
	// goroutine of it left) and traffic flows again.
	ipCmd(t, "-n", nsA, "link", "del", DefaultName)
	a.do(helperCmd{Op: "configure", Config: cfgA})
	if reply, err := a.dialUntil("198.19.2.1:7000", "again", 15*time.Second); err != nil || reply != "again/ack" {
		t.Errorf("a → b after jaco0 was made again: %q, %v", reply, err)
	}
	if ps := a.peers(); len(ps) != 1 || time.Since(ps[0].LastHandshake) > time.Minute {
		t.Errorf("a's peers after jaco0 was made again: %+v", ps)
	}

	// The MTU follows the underlay's on the next Configure.
	ipCmd(t, "-n", nsA, "link", "set", "eth0", "mtu", "4000")
	a.do(helperCmd{Op: "configure", Config: cfgA})
	if st := a.do(helperCmd{Op: "inspect"}).Iface; st.MTU != 4000-Overhead {
		t.Errorf("a's MTU over a 4000 underlay: %d, want %d", st.MTU, 4000-Overhead)
	}

	// In place: A takes another address in its block and a block of a
	// second network, 198.18.64.0/18, which B routes too (holding no block
	// of it, so with no source) and allows from A. The old address goes;
	// traffic flows to both new ones, in both networks.
	net2, block2 := netip.MustParsePrefix("198.18.64.0/18"), netip.MustParsePrefix("198.18.64.0/26")
	moved := cfgA
	moved.Addresses = []netip.Prefix{netip.MustParsePrefix("198.19.1.2/32"), netip.MustParsePrefix("198.18.64.1/32")}
	moved.Routes = []Route{{Dst: subnet, Src: netip.MustParseAddr("198.19.1.2")}, {Dst: net2, Src: netip.MustParseAddr("198.18.64.1")}}
	a.do(helperCmd{Op: "configure", Config: moved})
	grown := cfgB
	grown.Routes = append(slices.Clone(cfgB.Routes), Route{Dst: net2})
	grown.Peers = []Peer{{PublicKey: a.pub, Endpoint: "198.18.0.1:" + strconv.Itoa(DefaultListenPort), Allowed: []netip.Prefix{blockA, block2}}}
	b.do(helperCmd{Op: "configure", Config: grown})
	if st := a.do(helperCmd{Op: "inspect"}).Iface; !slices.Equal(st.Addrs, []string{"198.18.64.1/32", "198.19.1.2/32"}) ||
		!slices.Equal(st.Routes, []string{"198.18.64.0/18 198.18.64.1", "198.19.0.0/16 198.19.1.2"}) {
		t.Errorf("a's interface after the change: %+v", st)
	}
	if st := b.do(helperCmd{Op: "inspect"}).Iface; !slices.Equal(st.Routes, []string{"198.18.64.0/18 <nil>", "198.19.0.0/16 198.19.2.1"}) {
		t.Errorf("b's interface after the change: %+v", st)
	}
	if ps := b.peers(); len(ps) != 1 || !slices.Equal(ps[0].AllowedPrefixes, []netip.Prefix{blockA, block2}) &&
		!slices.Equal(ps[0].AllowedPrefixes, []netip.Prefix{block2, blockA}) {
		t.Errorf("b's peers after the change: %+v", ps)
	}
	a.do(helperCmd{Op: "serve", Addr: "198.19.1.2:7002"})
	a.do(helperCmd{Op: "serve", Addr: "198.18.64.1:7003"})
	for _, to := range []string{"198.19.1.2:7002", "198.18.64.1:7003"} {
		if reply, err := b.dialUntil(to, "moved", 10*time.Second); err != nil || reply != "moved/ack" {
			t.Errorf("b → a's new address %s: %q, %v", to, reply, err)
		}
	}
	if r := b.call(helperCmd{Op: "dial", Addr: "198.19.1.1:7000", Msg: "x", Timeout: 2 * time.Second}); r.Err == "" {
		t.Errorf("b reached a's old address: %q", r.Reply)
	}
	// No routes: B's block alone is routed, with no source; the kernel
	// picks one of A's addresses, both in blocks B allows.
	bare := moved
	bare.Routes = nil
	a.do(helperCmd{Op: "configure", Config: bare})
	if st := a.do(helperCmd{Op: "inspect"}).Iface; !slices.Equal(st.Routes, []string{"198.19.2.0/26 <nil>"}) {
		t.Errorf("a's routes with no network routed: %+v", st)
	}
	if reply, err := a.dialUntil("198.19.2.1:7000", "bare", 10*time.Second); err != nil || reply != "bare/ack" {
		t.Errorf("a → b by its block's route: %q, %v", reply, err)
	}

	// Close removes the interface and stops wireguard-go's goroutines (the
	// helper checks both before it answers).
	for _, n := range []*node{a, b} {
		n.do(helperCmd{Op: "close"})
	}
}
