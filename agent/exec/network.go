package exec

import (
	"context"
	"net/netip"
)

// Attachment is how a replica joins one overlay network on this node
// (docs/design.md §9, docs/adr/0026): an interface on the network's bridge
// with an address from the node's block, and a route to the whole subnet
// (virtual IPs included) through the bridge's gateway.
type Attachment struct {
	NetworkID string
	// Network is the network's name.
	Network string
	// Subnet is the network's whole subnet.
	Subnet netip.Prefix
	// Block is this node's /26 of Subnet; replicas take addresses from it.
	Block netip.Prefix
	// Gateway is the node's own address in Block (its first host): the
	// bridge's address, the next hop to the rest of Subnet and where the
	// node's DNS server answers replicas on this network.
	Gateway netip.Addr
	// Bridge is the Linux bridge of the network on this node.
	Bridge string
	// MTU is the replicas' interface MTU (the overlay's, below the
	// underlay's by WireGuard's overhead).
	MTU int
}

// Networks tells runtimes how replicas attach to overlay networks.
type Networks interface {
	// Attachment returns how to attach to the network named name, waiting
	// until this node holds a block of it or ctx ends.
	Attachment(ctx context.Context, name string) (Attachment, error)
}

// NetworkAddress is a replica's address on one overlay network.
type NetworkAddress struct {
	NetworkID string
	Addr      netip.Addr
}

// Networked is a Controller whose replica has addresses on overlay
// networks; the agent reports them with RUNNING.
type Networked interface {
	// NetworkAddresses lists the replica's addresses, none before Start.
	NetworkAddresses(ctx context.Context) ([]NetworkAddress, error)
}
