package netrules

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"testing"
)

// topology is one node (router) with two overlay networks and an
// outside host:
//
//	X = 10.77.0.0/16: this node's block 10.77.0.0/26 on bridge brx holds
//	    x1 (10.77.0.2) and x2 (10.77.0.3); x3 (10.77.0.66) sits in another
//	    block behind a routed link whose addresses are in no network
//	    (198.18.1.0/30), as a replica on another node sits behind jaco0;
//	    the rest of X is routed there too (x3 forwards nothing, so a
//	    packet no rule handles is lost, not answered).
//	Y = 10.88.0.0/16: y1 (10.88.0.2) on bridge bry.
//	outside: out (198.18.0.2) on a routed link, 198.18.0.0/30.
//
// The router starts with IP forwarding and bridge netfilter off: Apply
// must turn them on. Every namespace but the router runs servers that
// say its name.
type topology struct {
	router, x1, x2, x3, y1, out netns
}

const (
	netX     = "10.77.0.0/16"
	netY     = "10.88.0.0/16"
	addrX1   = "10.77.0.2"
	addrX2   = "10.77.0.3"
	addrX3   = "10.77.0.66"
	gwX      = "10.77.0.1" // the router's address on X
	addrY1   = "10.88.0.2"
	vipX     = "10.77.255.194" // X's top block
	vipEmpty = "10.77.255.195"
)

func newTopology(t *testing.T) *topology {
	t.Helper()
	needRoot(t)
	tp := &topology{router: newNetns(t, "router")}
	r := tp.router
	r.sysctl(t, IPForwardSysctl, "0")
	r.sysctl(t, BridgeNetfilterSysctl, "0")
	for _, br := range []struct{ name, addr string }{{"brx", gwX + "/26"}, {"bry", "10.88.0.1/26"}} {
		r.ip(t, "link", "add", br.name, "type", "bridge")
		r.ip(t, "addr", "add", br.addr, "dev", br.name)
		r.ip(t, "link", "set", br.name, "up")
	}
	bridged := func(name, bridge, addr, gw string) netns {
		n := newNetns(t, name)
		r.ip(t, "link", "add", "v-"+name, "type", "veth", "peer", "name", "eth0", "netns", string(n))
		r.ip(t, "link", "set", "v-"+name, "master", bridge, "up")
		// As CNI's bridge plugin with hairpinMode: a replica reaching
		// itself through a VIP gets its packets back out its own port.
		r.ip(t, "link", "set", "v-"+name, "type", "bridge_slave", "hairpin", "on")
		n.ip(t, "addr", "add", addr, "dev", "eth0")
		n.ip(t, "link", "set", "eth0", "up")
		n.ip(t, "route", "add", "default", "via", gw)
		return n
	}
	// routed links n to the router over 198.18.k.0/30, as the overlay
	// link does (its address in no network); n's own address is addr.
	routed := func(name string, k int, addr string) netns {
		n := newNetns(t, name)
		r.ip(t, "link", "add", "v-"+name, "type", "veth", "peer", "name", "eth0", "netns", string(n))
		r.ip(t, "addr", "add", fmt.Sprintf("198.18.%d.1/30", k), "dev", "v-"+name)
		r.ip(t, "link", "set", "v-"+name, "up")
		n.ip(t, "addr", "add", fmt.Sprintf("198.18.%d.2/30", k), "dev", "eth0")
		if addr != "" {
			n.ip(t, "addr", "add", addr+"/32", "dev", "eth0")
		}
		n.ip(t, "link", "set", "eth0", "up")
		src := cmp.Or(addr, fmt.Sprintf("198.18.%d.2", k))
		n.ip(t, "route", "add", "default", "via", fmt.Sprintf("198.18.%d.1", k), "src", src)
		n.sysctl(t, IPForwardSysctl, "0")
		return n
	}
	tp.x1 = bridged("x1", "brx", addrX1+"/26", gwX)
	tp.x2 = bridged("x2", "brx", addrX2+"/26", gwX)
	tp.y1 = bridged("y1", "bry", addrY1+"/26", "10.88.0.1")
	tp.x3 = routed("x3", 1, addrX3)
	tp.out = routed("out", 0, "")
	r.ip(t, "route", "add", netX, "via", "198.18.1.2") // the rest of X: "jaco0"
	for name, n := range map[string]netns{"x1": tp.x1, "x2": tp.x2, "x3": tp.x3, "y1": tp.y1, "out": tp.out} {
		n.serve(t, name)
	}
	return tp
}

// apply loads s in the router's namespace.
func (tp *topology) apply(t *testing.T, r *Rules, s State) {
	t.Helper()
	tp.router.must(t, func() error { return r.Apply(context.Background(), s) })
}

// rules returns the rules of a table unique to this test, closed when t
// ends.
func (tp *topology) rules(t *testing.T) *Rules {
	r := New(testTable)
	t.Cleanup(func() {
		if err := tp.router.do(r.Close); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

func mustAddrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func networks() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix(netX), netip.MustParsePrefix(netY)}
}

func gateways() []netip.Addr { return mustAddrs(gwX, "10.88.0.1") }
