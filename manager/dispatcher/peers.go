package dispatcher

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// overlayPeers is every node's end of the overlay as the store has it,
// kept by the dispatcher so each session can send its agent the others
// whenever one changes (docs/adr/0026). Guarded by Server.mu.
type overlayPeers struct {
	byNode map[string]*api.OverlayPeer
	// version counts changes, so a session knows whether to send again.
	version uint64
}

func newOverlayPeers() *overlayPeers {
	return &overlayPeers{byNode: map[string]*api.OverlayPeer{}}
}

// set records node n's peer entry (none when it has no usable overlay);
// it reports whether anything changed.
func (p *overlayPeers) set(n *api.Node) bool {
	peer := peerOf(n)
	old, had := p.byNode[n.GetId()]
	switch {
	case peer == nil && !had:
		return false
	case peer == nil:
		delete(p.byNode, n.GetId())
	case had && proto.Equal(old, peer):
		return false
	default:
		p.byNode[n.GetId()] = peer
	}
	p.version++
	return true
}

// remove forgets a removed node; it reports whether it was a peer.
func (p *overlayPeers) remove(id string) bool {
	if _, ok := p.byNode[id]; !ok {
		return false
	}
	delete(p.byNode, id)
	p.version++
	return true
}

// reset replaces every entry with the nodes' (a store restore).
func (p *overlayPeers) reset(nodes []*api.Node) {
	p.byNode = map[string]*api.OverlayPeer{}
	for _, n := range nodes {
		if peer := peerOf(n); peer != nil {
			p.byNode[n.GetId()] = peer
		}
	}
	p.version++
}

// except lists every peer but node self, by node id.
func (p *overlayPeers) except(self string) []*api.OverlayPeer {
	out := make([]*api.OverlayPeer, 0, len(p.byNode))
	for id, peer := range p.byNode {
		if id != self {
			out = append(out, peer)
		}
	}
	slices.SortFunc(out, func(a, b *api.OverlayPeer) int { return strings.Compare(a.NodeId, b.NodeId) })
	return out
}

// peerOf is what other nodes need to reach n over the overlay, nil when
// n is none of theirs: it published no usable overlay end, or its
// isolation is unavailable (the spec drops such a node from every peer
// list; it runs no replicas anyway).
func peerOf(n *api.Node) *api.OverlayPeer {
	d := n.GetDescription()
	o := d.GetOverlay()
	if o == nil || o.GetUnavailable() || d.GetIsolationUnavailable() || len(o.GetPublicKey()) != 32 {
		return nil
	}
	host, _, err := net.SplitHostPort(n.GetAddress())
	if err != nil || host == "" {
		return nil
	}
	peer := &api.OverlayPeer{NodeId: n.GetId(), PublicKey: o.GetPublicKey(),
		Endpoint: net.JoinHostPort(host, strconv.Itoa(int(o.GetPort())))}
	for _, b := range n.GetOverlayBlocks() {
		peer.Allowed = append(peer.Allowed, b.GetPrefix())
	}
	slices.Sort(peer.Allowed)
	return peer
}
