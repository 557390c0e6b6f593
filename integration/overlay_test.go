package integration

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// overlayStatus is `jaco overlay --format json`.
type overlayStatus struct {
	Kind        string
	PublicKey   string `json:"public_key"`
	Unavailable bool
	Message     string
	Addresses   []string
	Peers       []overlayPeer
}

type overlayPeer struct {
	NodeID        string `json:"node_id"`
	Endpoint      string
	Allowed       []string
	LastHandshake string `json:"last_handshake"`
}

// TestOverlayPeersFollowTheStore: three nodes in their own network
// namespaces each run an overlay link once a replica on a network is
// placed on them; every node has the two others as WireGuard peers, at
// their addresses, allowed exactly their blocks of the network, and
// handshakes with them; a removed node leaves both other nodes' peers
// (docs/adr/0026; the spec: within 2 s).
func TestOverlayPeersFollowTheStore(t *testing.T) {
	t.Parallel()
	hub := newHub(t)
	a := hub.addHost(t).startJacod(t, "a")
	b := hub.addHost(t).startJacod(t, "b")
	c := hub.addHost(t).startJacod(t, "c")
	wantOK(t, a.jaco("cluster", "init", "--quiet", "--overlay-pool", "198.19.0.0/16"))
	for _, w := range []*nsDaemon{b, c} {
		wantOK(t, w.join(a, a.joinToken(t, "worker")))
	}
	wantOK(t, a.jaco("network", "create", "front"))
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, a.jaco("service", "create", "-d", "--name", "probe", "--mode", "global", "--network", "front",
		"-e", "OUT="+out, "--bundle", bundle))

	ids := map[string]string{} // node id → name
	eventually(t, 30*time.Second, func() error {
		nodes, err := a.tryNodes()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			ids[n.ID] = n.Hostname
		}
		if len(ids) != 3 {
			return fmt.Errorf("nodes %v, want 3", ids)
		}
		return nil
	})
	front := netip.MustParsePrefix("198.19.0.0/20") // the pool's first network
	status := map[string]overlayStatus{}
	// peersOf is what d's link says of the others: "name endpoint blocks
	// handshake?", sorted.
	peersOf := func(d *nsDaemon) ([]string, error) {
		st, err := decode[overlayStatus](d.jaco("overlay", "--format", "json"))
		if err != nil {
			return nil, err
		}
		status[d.name] = st
		if st.Unavailable || st.Kind != "userspace" && st.Kind != "kernel" {
			return nil, fmt.Errorf("%s: overlay %+v", d.name, st)
		}
		var out []string
		for _, p := range st.Peers {
			out = append(out, fmt.Sprintf("%s %s %s %v", ids[p.NodeID], p.Endpoint, strings.Join(p.Allowed, ","), p.LastHandshake != ""))
		}
		slices.Sort(out)
		return out, nil
	}
	hostOf := map[string]*host{"a": a.host, "b": b.host, "c": c.host}
	eventually(t, 60*time.Second, func() error {
		peersBy := map[string][]string{}
		for _, d := range []*nsDaemon{a, b, c} {
			peers, err := peersOf(d)
			if err != nil {
				return err
			}
			peersBy[d.name] = peers
		}
		for _, d := range []*nsDaemon{a, b, c} {
			peers := peersBy[d.name]
			if len(status[d.name].Addresses) != 1 || !front.Contains(netip.MustParseAddr(status[d.name].Addresses[0])) {
				return fmt.Errorf("%s: overlay addresses %v, want one in %v", d.name, status[d.name].Addresses, front)
			}
			var want []string
			for _, o := range []*nsDaemon{a, b, c} {
				if o == d {
					continue
				}
				if len(status[o.name].Addresses) != 1 {
					return fmt.Errorf("%s has no overlay address yet", o.name)
				}
				block := netip.PrefixFrom(netip.MustParseAddr(status[o.name].Addresses[0]), 26).Masked()
				want = append(want, fmt.Sprintf("%s %s:51871 %s true", o.name, hostOf[o.name].ip, block))
			}
			if !slices.Equal(peers, want) {
				return fmt.Errorf("%s's peers:\n%s\nwant:\n%s", d.name, strings.Join(peers, "\n"), strings.Join(want, "\n"))
			}
		}
		return nil
	})

	t.Log("network inspect names every node of the network, with a's handshakes")
	type netPeer struct {
		NodeID        string `json:"node_id"`
		Hostname      string
		Block         string
		Endpoint      string
		LastHandshake string `json:"last_handshake"`
	}
	insp, err := decode[struct{ Peers []netPeer }](a.jaco("network", "inspect", "front"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range insp.Peers {
		block := netip.MustParsePrefix(p.Block)
		got = append(got, fmt.Sprintf("%s %s %v %v", p.Hostname, p.Endpoint, front.Contains(block.Addr()) && block.Bits() == 26,
			p.LastHandshake != "" || p.Hostname == "a"))
	}
	slices.Sort(got)
	want := []string{"a " + hostOf["a"].ip + ":51871 true true", "b " + hostOf["b"].ip + ":51871 true true", "c " + hostOf["c"].ip + ":51871 true true"}
	if !slices.Equal(got, want) {
		t.Errorf("network inspect front peers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	t.Log("a node that joins is a peer everywhere within 2 s")
	d := hub.addHost(t).startJacod(t, "d")
	wantOK(t, d.join(a, a.joinToken(t, "worker")))
	joined := time.Now()
	eventually(t, 10*time.Second, func() error {
		for _, o := range []*nsDaemon{a, b, c} {
			st, err := decode[overlayStatus](o.jaco("overlay", "--format", "json"))
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(st.Peers, func(p overlayPeer) bool { return p.Endpoint == d.host.ip+":51871" }) {
				return fmt.Errorf("%s's peers lack d: %+v", o.name, st.Peers)
			}
		}
		return nil
	})
	took := time.Since(joined)
	t.Logf("d was a peer of a, b and c %v after its join returned", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("d became a peer everywhere %v after its join; the spec allows 2s", took.Round(time.Millisecond))
	}

	t.Log("a removed node leaves every peer list")
	c.allowExit()                            // a removed node stops
	wantOK(t, a.jaco("node", "remove", "c")) // returns once c is gone from the store
	removed := time.Now()
	eventually(t, 5*time.Second, func() error {
		for _, d := range []*nsDaemon{a, b} {
			peers, err := peersOf(d)
			if err != nil {
				return err
			}
			for _, p := range peers {
				if strings.HasPrefix(p, "c ") {
					return fmt.Errorf("%s still has c as a peer: %v", d.name, peers)
				}
			}
			if len(peers) != 2 {
				return fmt.Errorf("%s's peers %v, want the other node and d only", d.name, peers)
			}
		}
		return nil
	})
	if took := time.Since(removed); took > 2*time.Second {
		t.Errorf("c left the peer lists %v after its removal; the spec allows 2s", took.Round(time.Millisecond))
	}
}
