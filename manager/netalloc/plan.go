package netalloc

import (
	"iter"
	"net/netip"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/ipam"
)

// shortage is a node that needs a block of a network that has none left.
type shortage struct {
	nodeID, network string
	err             error
}

// plan returns the nodes whose blocks must change, with their new block
// lists, and the blocks it could not give. A node needs a block of a
// network while a task on it attaches to the network (api.TaskNetworks),
// whatever the task's state: an ended replica's address is not given to
// another while its task is kept. Every mesh node needs a block of the
// ingress network while any service publishes an ingress port. Blocks are
// only added or dropped, never moved, so a running replica keeps its
// address.
func plan(networks []*api.Network, nodes []*api.Node, tasks iter.Seq[*api.Task], services []*api.Service) ([]*api.Node, []shortage) {
	byName := make(map[string]*api.Network, len(networks))
	byID := make(map[string]*api.Network, len(networks))
	for _, n := range networks {
		byName[n.GetSpec().GetName()] = n
		byID[n.GetId()] = n
	}
	// needs[node][network id]
	needs := map[string]map[string]bool{}
	for t := range tasks {
		if t.GetNodeId() == "" {
			continue
		}
		for _, name := range api.TaskNetworks(t.GetSpec()) {
			nw := byName[name]
			if nw == nil {
				continue // removed: nothing attaches to it any more
			}
			need(needs, t.GetNodeId(), nw.GetId())
		}
	}
	if ingress := ingressNetwork(networks); ingress != nil && meshInUse(services) {
		for _, n := range nodes {
			if meshNode(n) {
				need(needs, n.GetId(), ingress.GetId())
			}
		}
	}

	// taken[network id]: the blocks nodes keep.
	kept := make(map[string][]*api.OverlayBlock, len(nodes))
	taken := map[string][]netip.Prefix{}
	for _, n := range nodes {
		for _, b := range n.GetOverlayBlocks() {
			if byID[b.GetNetworkId()] == nil || !needs[n.GetId()][b.GetNetworkId()] {
				continue
			}
			p, err := netip.ParsePrefix(b.GetPrefix())
			if err != nil {
				continue // never written by this package: dropped
			}
			kept[n.GetId()] = append(kept[n.GetId()], b)
			taken[b.GetNetworkId()] = append(taken[b.GetNetworkId()], p)
		}
	}

	var changed []*api.Node
	var short []shortage
	for _, n := range nodes {
		blocks := kept[n.GetId()]
		for _, id := range sortedKeys(needs[n.GetId()]) {
			if slices.ContainsFunc(blocks, func(b *api.OverlayBlock) bool { return b.GetNetworkId() == id }) {
				continue
			}
			nw := byID[id]
			subnet, err := netip.ParsePrefix(nw.GetSpec().GetSubnet())
			if err == nil {
				var p netip.Prefix
				if p, err = ipam.AllocateBlock(subnet, taken[id]); err == nil {
					blocks = append(blocks, &api.OverlayBlock{NetworkId: id, Prefix: p.String(), Subnet: subnet.String()})
					taken[id] = append(taken[id], p)
					continue
				}
			}
			short = append(short, shortage{nodeID: n.GetId(), network: nw.GetSpec().GetName(), err: err})
		}
		if !sameBlocks(blocks, n.GetOverlayBlocks()) {
			upd := proto.CloneOf(n)
			upd.OverlayBlocks = blocks
			changed = append(changed, upd)
		}
	}
	return changed, short
}

func need(needs map[string]map[string]bool, nodeID, networkID string) {
	if needs[nodeID] == nil {
		needs[nodeID] = map[string]bool{}
	}
	needs[nodeID][networkID] = true
}

func sameBlocks(a, b []*api.OverlayBlock) bool {
	return slices.EqualFunc(a, b, func(x, y *api.OverlayBlock) bool { return proto.Equal(x, y) })
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
