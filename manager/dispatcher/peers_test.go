package dispatcher

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func overlayDesc(key byte) *api.NodeDescription {
	return &api.NodeDescription{Hostname: "w", Overlay: &api.OverlayEndpoint{
		PublicKey: bytes.Repeat([]byte{key}, 32), Port: 51820, Kind: "userspace"}}
}

func peersSeen(peers []*api.OverlayPeer) string {
	var b strings.Builder
	for _, p := range peers {
		fmt.Fprintf(&b, "%s %s %x %v;", p.NodeId, p.Endpoint, p.PublicKey[:1], p.Allowed)
	}
	return b.String()
}

// TestOverlayPeersFollowTheStore: each agent's session carries every
// other node's overlay end, and a new message whenever one changes: a
// node that joins or gets a block, a node whose isolation fails or that
// is removed (docs/adr/0026).
func TestOverlayPeersFollowTheStore(t *testing.T) {
	n1, n2 := workerNode("n1"), workerNode("n2")
	n1.Address, n2.Address = "198.18.0.1:7000", "198.18.0.2:7000"
	h := newHarness(t, n1, n2)
	h.run()
	_, s1, first := h.openSession("n1", overlayDesc(1))
	if len(first.OverlayPeers) != 0 {
		t.Fatalf("first peers of n1 before n2 has a session: %s", peersSeen(first.OverlayPeers))
	}
	_, _, first2 := h.openSession("n2", overlayDesc(2))
	if got := peersSeen(first2.OverlayPeers); got != "n1 198.18.0.1:51820 01 [];" {
		t.Fatalf("n2's peers: %q, want n1 at its address and overlay port", got)
	}
	waitPeers := func(stream api.DispatcherService_SessionClient, want string) {
		t.Helper()
		for {
			msg, err := recv(t, stream)
			if err != nil {
				t.Fatal(err)
			}
			if peersSeen(msg.OverlayPeers) == want {
				return
			}
		}
	}
	waitPeers(s1, "n2 198.18.0.2:51820 02 [];")

	setNode := func(id string, fn func(*api.Node)) {
		t.Helper()
		if err := h.st.Update(context.Background(), func(tx *store.Tx) error {
			n := tx.GetNode(id)
			fn(n)
			return tx.Update(n)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setNode("n2", func(n *api.Node) {
		n.OverlayBlocks = []*api.OverlayBlock{{NetworkId: "net1", Prefix: "10.0.0.64/26"}, {NetworkId: "net2", Prefix: "10.1.0.0/26"}}
	})
	waitPeers(s1, "n2 198.18.0.2:51820 02 [10.0.0.64/26 10.1.0.0/26];")

	setNode("n2", func(n *api.Node) { n.Description.IsolationUnavailable = true })
	waitPeers(s1, "")
	setNode("n2", func(n *api.Node) { n.Description.IsolationUnavailable = false })
	waitPeers(s1, "n2 198.18.0.2:51820 02 [10.0.0.64/26 10.1.0.0/26];")

	if err := h.st.Update(context.Background(), func(tx *store.Tx) error { return tx.Delete(tx.GetNode("n2")) }); err != nil {
		t.Fatal(err)
	}
	waitPeers(s1, "")
}
