package netrules

import (
	"errors"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
)

// blockedWait is how long a connection that must be dropped is given.
const blockedWait = 400 * time.Millisecond

func reaches(t *testing.T, from netns, network, addr, want string) {
	t.Helper()
	got, err := from.ask(network, addr, 2*time.Second)
	if err != nil || got.name != want {
		t.Errorf("%s %s → %s = %+v, %v; want %q", network, from, addr, got, err, want)
	}
}

func blocked(t *testing.T, from netns, addr string) {
	t.Helper()
	got, err := from.ask("tcp4", addr, blockedWait)
	if !timedOut(err) {
		t.Errorf("%s → %s = %+v, %v; want dropped (a timeout)", from, addr, got, err)
	}
}

func tableExists(t *testing.T, n netns, table string) bool {
	t.Helper()
	var found bool
	n.must(t, func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
		for _, tb := range tables {
			found = found || tb.Name == table
		}
		return err
	})
	return found
}

func TestSeparationKeepsNetworksApart(t *testing.T) {
	tp := newTopology(t)
	r := tp.rules(t)
	tp.apply(t, r, State{Networks: networks()})

	for _, sc := range []string{IPForwardSysctl, BridgeNetfilterSysctl} {
		if v := tp.router.readSysctl(t, sc); v != "1" {
			t.Errorf("after Apply %s = %s, want 1", sc, v)
		}
	}
	reaches(t, tp.x1, "tcp4", addrX2, "x2") // same bridge
	reaches(t, tp.x2, "tcp4", addrX1, "x1")
	reaches(t, tp.x1, "tcp4", addrX3, "x3") // another block, routed
	reaches(t, tp.x3, "tcp4", addrX2, "x2")
	reaches(t, tp.x1, "udp4", addrX2, "x2")
	blocked(t, tp.x1, addrY1)
	blocked(t, tp.y1, addrX1)
	blocked(t, tp.y1, addrX3)
	blocked(t, tp.out, addrX2) // the outside reaches no replica
	blocked(t, tp.out, addrY1)
	// Replicas still reach the outside: replies come back from outside
	// their network.
	reaches(t, tp.x1, "tcp4", "198.18.0.2", "out")
	reaches(t, tp.y1, "udp4", "198.18.0.2", "out")

	// Without the table everything routes: the blocks above were the
	// rules' doing, not a broken topology.
	if err := tp.router.do(r.Close); err != nil {
		t.Fatalf("close: %v", err)
	}
	if tableExists(t, tp.router, testTable) {
		t.Fatal("table still there after Close")
	}
	reaches(t, tp.x1, "tcp4", addrY1, "y1")
	reaches(t, tp.out, "tcp4", addrX2, "x2")
}

// spread asks addr n times from `from` and counts the answers.
func spread(t *testing.T, from netns, network, addr string, n int) map[answer]int {
	t.Helper()
	seen := map[answer]int{}
	for range n {
		a, err := from.ask(network, addr, 2*time.Second)
		if err != nil {
			t.Fatalf("%s %s → %s: %v (after %v)", network, from, addr, err, seen)
		}
		seen[a]++
	}
	return seen
}

func wantNames(t *testing.T, what string, seen map[answer]int, want ...string) {
	t.Helper()
	names := map[string]bool{}
	for a := range seen {
		names[a.name] = true
	}
	if got := slices.Sorted(maps.Keys(names)); !slices.Equal(got, want) {
		t.Errorf("%s landed on %v, want exactly %v", what, seen, want)
	}
}

func refusedQuickly(t *testing.T, from netns, network, addr string) {
	t.Helper()
	start := time.Now()
	got, err := from.ask(network, addr, 3*time.Second)
	if took := time.Since(start); !errors.Is(err, syscall.ECONNREFUSED) || took > time.Second {
		t.Errorf("%s %s → %s = %+v, %v after %v; want refused at once", network, from, addr, got, err, took)
	}
}

func TestVIPSpreadsNewConnectionsOverBackends(t *testing.T) {
	tp := newTopology(t)
	r := tp.rules(t)
	vip := VIP{Addr: netip.MustParseAddr(vipX), Backends: mustAddrs(addrX1, addrX2, addrX3)}
	empty := VIP{Addr: netip.MustParseAddr(vipEmpty)}
	tp.apply(t, r, State{Networks: networks(), VIPs: []VIP{vip, empty}, Gateways: gateways()})

	// x1 is a backend itself (a service calling its own name), x2 answers
	// over the bridge, x3 through the routed link.
	fromX1 := spread(t, tp.x1, "tcp4", vipX, 50)
	wantNames(t, "tcp from x1", fromX1, "x1", "x2", "x3")
	for a := range fromX1 {
		// Backends see the client as it is, but for x1 reaching itself:
		// that answer must come back through the node.
		if want := map[bool]string{true: gwX, false: addrX1}[a.name == "x1"]; a.from != want {
			t.Errorf("x1's connection reached %s from %s, want %s", a.name, a.from, want)
		}
	}
	wantNames(t, "udp from x1", spread(t, tp.x1, "udp4", vipX, 40), "x1", "x2", "x3")
	wantNames(t, "tcp from x3", spread(t, tp.x3, "tcp4", vipX, 40), "x1", "x2", "x3")
	fromNode := spread(t, tp.router, "tcp4", vipX, 40)
	wantNames(t, "tcp from the node", fromNode, "x1", "x2", "x3")
	for a := range fromNode {
		// The node reached the VIP from its jaco0 address; backends see
		// its gateway on X, which other nodes' separation lets in.
		if a.from != gwX {
			t.Errorf("a connection from the node reached %s from %s, want %s", a.name, a.from, gwX)
		}
	}
	blocked(t, tp.y1, vipX) // another network's VIP leads nowhere
	blocked(t, tp.out, vipX)

	refusedQuickly(t, tp.x1, "tcp4", vipEmpty)
	refusedQuickly(t, tp.x1, "udp4", vipEmpty)
	refusedQuickly(t, tp.router, "tcp4", vipEmpty)

	// x3 leaves: no new connection reaches it.
	vip.Backends = mustAddrs(addrX1, addrX2)
	tp.apply(t, r, State{Networks: networks(), VIPs: []VIP{vip, empty}, Gateways: gateways()})
	wantNames(t, "tcp after x3 left", spread(t, tp.x1, "tcp4", vipX, 50), "x1", "x2")
	// From x2, which made no UDP flow before: a flow of x1 whose source
	// port came round again would still be x3's (conntrack).
	wantNames(t, "udp after x3 left", spread(t, tp.x2, "udp4", vipX, 30), "x1", "x2")

	// The last backend leaves: refused, as a VIP never had any.
	vip.Backends = nil
	tp.apply(t, r, State{Networks: networks(), VIPs: []VIP{vip, empty}, Gateways: gateways()})
	refusedQuickly(t, tp.x1, "tcp4", vipX)
}

// What the package comment promises of flows made before a backend
// leaves: conntrack keeps them on it (for UDP, until the flow idles out).
func TestVIPKeepsExistingFlowsOnTheirBackend(t *testing.T) {
	tp := newTopology(t)
	r := tp.rules(t)
	vip := VIP{Addr: netip.MustParseAddr(vipX), Backends: mustAddrs(addrX1, addrX2, addrX3)}
	tp.apply(t, r, State{Networks: networks(), VIPs: []VIP{vip}, Gateways: gateways()})

	var flow net.Conn // a UDP flow that landed on x3
	for range 60 {
		var c net.Conn
		tp.x1.must(t, func() (err error) {
			c, err = net.Dial("udp4", net.JoinHostPort(vipX, port))
			return err
		})
		if a := exchange(t, c); a.name == "x3" {
			flow = c
			break
		}
		c.Close()
	}
	if flow == nil {
		t.Fatal("60 UDP flows to the VIP, none on x3")
	}
	defer flow.Close()

	vip.Backends = mustAddrs(addrX1, addrX2)
	tp.apply(t, r, State{Networks: networks(), VIPs: []VIP{vip}, Gateways: gateways()})
	if a := exchange(t, flow); a.name != "x3" {
		t.Errorf("the flow made before x3 left now reaches %s, want x3 still", a.name)
	}
	// New flows from x2, which made none before (x1's might reuse a port).
	wantNames(t, "new flows", spread(t, tp.x2, "udp4", vipX, 30), "x1", "x2")
}

// exchange sends a datagram on c and reads the answer.
func exchange(t *testing.T, c net.Conn) answer {
	t.Helper()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("who")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	k, err := c.Read(buf)
	if err != nil {
		t.Fatalf("udp %s → %s: %v", c.LocalAddr(), c.RemoteAddr(), err)
	}
	name, from, _ := strings.Cut(string(buf[:k]), " ")
	return answer{name, from}
}
