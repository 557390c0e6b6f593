package netrules

import (
	"net/netip"
	"testing"
)

// The mesh on the topology's router: X is the ingress network (the
// router's gateway on it gwX), tcp and udp 8000 go to port 7000 of x1
// (on the router's bridge) and x3 (behind the routed link, as on another
// node), 8001 has no backend; x2 is behind a VIP of X.
const (
	nodeAddr  = "198.18.0.1" // the router's address on out's link
	meshTCP   = nodeAddr + ":8000"
	meshIdle  = nodeAddr + ":8001"
	meshOther = "198.18.1.1:8000" // the router's address on x3's link
)

func ingressState() State {
	backends := mustAddrs(addrX1, addrX3)
	return State{
		Networks: networks(),
		Gateways: gateways(),
		VIPs:     []VIP{{Addr: netip.MustParseAddr(vipX), Backends: mustAddrs(addrX2)}},
		Ingress: &Ingress{
			Subnet:  netip.MustParsePrefix(netX),
			Gateway: netip.MustParseAddr(gwX),
			Ports: []Published{
				{Proto: "tcp", Port: 8000, Target: 7000, Backends: backends},
				{Proto: "udp", Port: 8000, Target: 7000, Backends: backends},
				{Proto: "tcp", Port: 8001, Target: 7000},
				{Proto: "udp", Port: 8001, Target: 7000},
			},
		},
	}
}

func TestIngressPublishesOnEveryNodeAddress(t *testing.T) {
	tp := newTopology(t)
	r := tp.rules(t)
	tp.apply(t, r, ingressState())

	for _, c := range []struct {
		what    string
		from    netns
		network string
		addr    string
	}{
		{"tcp from outside", tp.out, "tcp4", meshTCP},
		{"udp from outside", tp.out, "udp4", meshTCP},
		{"tcp from outside to another node address", tp.out, "tcp4", meshOther},
		{"tcp from the node itself", tp.router, "tcp4", meshTCP},
		{"tcp from a replica on another network", tp.y1, "tcp4", meshTCP},
	} {
		seen := spread(t, c.from, c.network, c.addr, 40)
		wantNames(t, c.what, seen, "x1", "x3")
		for a := range seen {
			// Backends answer the node's gateway, so answers come back
			// through it, wherever the backend runs.
			if a.from != gwX {
				t.Errorf("%s reached %s from %s, want the node's ingress gateway %s", c.what, a.name, a.from, gwX)
			}
		}
	}

	refusedQuickly(t, tp.out, "tcp4", meshIdle)
	refusedQuickly(t, tp.out, "udp4", meshIdle)
	refusedQuickly(t, tp.router, "tcp4", meshIdle)

	// The mesh's exemption is its own: the outside still reaches no
	// replica directly, nor through a VIP (a DNAT that is not the mesh's),
	// and another network's VIP still leads nowhere.
	blocked(t, tp.out, addrX1)
	blocked(t, tp.out, addrX3)
	blocked(t, tp.out, vipX)
	blocked(t, tp.y1, vipX)
	blocked(t, tp.y1, addrX1)
	reaches(t, tp.x1, "tcp4", vipX, "x2")

	// x3 leaves and the udp port loses all its backends.
	s := ingressState()
	s.Ingress.Ports[0].Backends = mustAddrs(addrX1)
	s.Ingress.Ports[1].Backends = nil
	tp.apply(t, r, s)
	wantNames(t, "tcp after x3 left", spread(t, tp.out, "tcp4", meshTCP, 20), "x1")
	refusedQuickly(t, tp.y1, "udp4", meshTCP)

	// Without a gateway on the ingress network (no block yet) the node
	// cannot publish: every port refuses.
	s.Ingress.Gateway = netip.Addr{}
	tp.apply(t, r, s)
	refusedQuickly(t, tp.out, "tcp4", meshTCP)

	// Without ingress the ports are the node's own again: nothing
	// listens there.
	s.Ingress = nil
	tp.apply(t, r, s)
	refusedQuickly(t, tp.out, "tcp4", meshTCP)
}
