package netview

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// View is what the store says of this node's networks.
type View struct {
	// Node is this node, with its blocks.
	Node *api.Node
	// Networks are the networks the node holds a block of.
	Networks []*api.Network
	// Endpoints are the services on those networks.
	Endpoints []*api.ServiceEndpoint
}

// DefaultMTU is the replicas' MTU on a network when the overlay link's is
// not known: a 1500-byte underlay less WireGuard's overhead as the
// overlay package counts it.
const DefaultMTU = 1420

// BridgeName is the Linux bridge of a network on a node ("jn" and 12 hex
// digits: within IFNAMSIZ, and distinct for nodes sharing a machine).
func BridgeName(nodeID, networkID string) string {
	sum := sha256.Sum256([]byte(nodeID + "/" + networkID))
	return "jn" + hex.EncodeToString(sum[:])[:12]
}

// Gateway is the node's own address in a block: its first host.
func Gateway(block netip.Prefix) netip.Addr { return block.Masked().Addr().Next() }

// Attachments are the node's attachments by network name: one for each
// network it holds a block of and knows (a block of a network missing from
// the view, or one that does not parse, gives none).
func Attachments(v View, mtu int) map[string]exec.Attachment {
	if mtu <= 0 {
		mtu = DefaultMTU
	}
	byID := map[string]*api.Network{}
	for _, n := range v.Networks {
		byID[n.GetId()] = n
	}
	out := map[string]exec.Attachment{}
	for _, b := range v.Node.GetOverlayBlocks() {
		n := byID[b.GetNetworkId()]
		block, err1 := netip.ParsePrefix(b.GetPrefix())
		subnet, err2 := netip.ParsePrefix(n.GetSpec().GetSubnet())
		if n == nil || err1 != nil || err2 != nil {
			continue
		}
		out[n.GetSpec().GetName()] = exec.Attachment{
			NetworkID: n.GetId(),
			Network:   n.GetSpec().GetName(),
			Subnet:    subnet.Masked(),
			Block:     block.Masked(),
			Gateway:   Gateway(block),
			Bridge:    BridgeName(v.Node.GetId(), n.GetId()),
			MTU:       mtu,
		}
	}
	return out
}

// Gateways are the node's addresses on its networks, sorted: where its DNS
// server answers.
func Gateways(v View) []netip.Addr {
	var out []netip.Addr
	for _, a := range Attachments(v, 0) {
		out = append(out, a.Gateway)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// sortedNetworks are the view's networks by name.
func sortedNetworks(v View) []*api.Network {
	out := slices.Clone(v.Networks)
	slices.SortFunc(out, func(a, b *api.Network) int { return strings.Compare(a.GetSpec().GetName(), b.GetSpec().GetName()) })
	return out
}
