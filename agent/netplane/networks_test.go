package netplane

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/jaco-project/jaco/agent/netrules"
	"github.com/jaco-project/jaco/api"
)

// planeView is a node holding a block of "front" on loopback (127/8 is all
// local, so the DNS server can bind the gateway) with web on it.
func planeView(withBlock bool) (*api.Node, []*api.Network, []*api.ServiceEndpoint) {
	node := &api.Node{Id: "node-a"}
	if withBlock {
		node.OverlayBlocks = []*api.OverlayBlock{{NetworkId: "n1", Prefix: "127.77.0.0/26", Subnet: "127.77.0.0/16"}}
	}
	nets := []*api.Network{{Id: "n1", Spec: &api.NetworkSpec{Name: "front", Subnet: "127.77.0.0/16"}}}
	eps := []*api.ServiceEndpoint{{ServiceName: "web", NetworkId: "n1", VirtualIp: "127.77.255.193",
		Replicas: []*api.EndpointReplica{{TaskId: "t1", NodeId: "node-b", Address: "127.77.0.70"}}}}
	return node, nets, eps
}

func startNetworks(t *testing.T) *networks {
	t.Helper()
	p := newNetworks(slog.New(slog.DiscardHandler), "node-a")
	p.dnsPort = 53530
	p.rules = &recordedRules{}
	p.resolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p.resolvConf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// recordedRules keeps the states networks applies.
type recordedRules struct {
	mu     sync.Mutex
	states []netrules.State
	closed int
}

func (r *recordedRules) Apply(_ context.Context, s netrules.State) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, s)
	return nil
}

func (r *recordedRules) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed++
	return nil
}

func (r *recordedRules) last() (netrules.State, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.states) == 0 {
		return netrules.State{}, 0, r.closed
	}
	return r.states[len(r.states)-1], len(r.states), r.closed
}

func TestAttachmentWaitsForTheBlock(t *testing.T) {
	p := startNetworks(t)
	got := make(chan error, 1)
	go func() {
		att, err := p.attachment(context.Background(), "front")
		if err == nil && att.Gateway != netip.MustParseAddr("127.77.0.1") {
			err = errors.New("gateway " + att.Gateway.String())
		}
		got <- err
	}()
	p.follow(planeView(false))
	select {
	case err := <-got:
		t.Fatalf("Attachment returned before the node held a block: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.follow(planeView(true))
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Attachment still waiting after the block came")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.attachment(ctx, "back"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Attachment of a network without a block: %v, want the deadline", err)
	}
}

// The node answers replicas on its gateway of each network it holds a
// block of, from the view, and stops when the block goes.
func TestDNSOnEachGatewayFollowsTheView(t *testing.T) {
	p := startNetworks(t)
	p.follow(planeView(true))
	addr := "127.77.0.1:53530"
	q := new(mdns.Msg)
	q.SetQuestion("web.", mdns.TypeA)
	// Asked from a replica's address on the network (loopback holds it).
	c := &mdns.Client{Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP("127.77.0.66")}}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, _, err := c.Exchange(q, addr)
		if err == nil && len(r.Answer) == 1 && r.Answer[0].(*mdns.A).A.String() == "127.77.255.193" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web. on %s: %v %v, want the VIP", addr, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, _, _ := p.rules.(*recordedRules).last()
	if len(st.VIPs) != 1 || len(st.VIPs[0].Backends) != 1 || len(st.Networks) != 1 {
		t.Fatalf("rules loaded %+v: want front with web's VIP over its replica", st)
	}
	p.follow(planeView(false))
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("DNS still answers on the gateway of a block the node gave back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Cut off from the managers, the node spreads over its own replicas of a
// service where it has any, until the next session message.
func TestCutOffPrefersLocalReplicas(t *testing.T) {
	p := startNetworks(t)
	node, nets, eps := planeView(true)
	eps[0].Replicas = append(eps[0].Replicas, &api.EndpointReplica{TaskId: "t2", NodeId: "node-a", Address: "127.77.0.2"})
	rules := p.rules.(*recordedRules)
	waitBackends := func(what string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, _, _ := rules.last()
			var got []string
			if len(st.VIPs) == 1 {
				for _, b := range st.VIPs[0].Backends {
					got = append(got, b.String())
				}
			}
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: web's backends %v, want %v", what, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	p.follow(node, nets, eps)
	waitBackends("in session", "127.77.0.70", "127.77.0.2")
	p.disconnected()
	waitBackends("cut off", "127.77.0.2")
	p.follow(node, nets, eps)
	waitBackends("back in session", "127.77.0.70", "127.77.0.2")
}
