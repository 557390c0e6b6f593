// Package overlay runs this node's end of the encrypted overlay between
// nodes: one WireGuard interface, jaco0, with a peer for every other node
// (docs/adr/0026-overlay-networks.md). It knows nothing of the store or the
// dispatcher: the agent (docs/design.md §9) turns the Node objects it sees
// into a Config and calls Link.Configure whenever they change.
//
// # Two implementations, one interface
//
// Open picks the kernel's WireGuard when the kernel can make a link of
// type wireguard (probed once per process by making one and deleting it,
// KernelAvailable), configured over generic netlink by wgctrl. Otherwise
// it runs wireguard-go in this process over a TUN device, configured with
// the text protocol (device.IpcSet). The fallback exists because many
// kernels a node may run on (this project's CI machine among them) have no
// WireGuard module but do have /dev/net/tun; both speak the same protocol,
// so a kernel node and a userspace node are peers of each other. Both sit
// behind the same diff (wg.go): the addresses, MTU and routes are set
// over netlink the same way for both.
//
// The userspace device's goroutines belong to the Link: Close stops the
// device, waits for its routines, and the TUN interface goes with its file
// descriptor. A kernel link holds no goroutine of ours; one left by a
// jacod that died keeps forwarding, and the next Open adopts it.
//
// Open wraps every failure to make the interface in ErrUnavailable: a node
// that can run neither implementation reports overlay_unavailable. An
// interface deleted behind the Link's back (wireguard-go then stops by
// itself) is made again by the next Configure, the old device closed
// first, so following the store also repairs the link.
//
// # Peers follow the store
//
// Configure takes the whole desired state, not changes: the caller passes
// every peer the store lists, and peers not listed are removed. A caller
// that missed an event, or restarted, is right again on its next call, and
// a node removed or isolated leaves every peer list on the next
// Configure. Listed peers are updated in place, so their sessions survive
// a Configure that does not change them, and the key and listen port are
// rewritten only when they differ (wireguard-go rebinds its socket on
// every listen_port it is given).
//
// # Networks, blocks and routes
//
// The Config follows docs/adr/0026-overlay-networks.md: each overlay
// network has its own subnet, and each node holds a /26 block of every
// network it runs replicas of. A node has one address per block it holds
// (Config.Addresses, host addresses such as 198.19.1.1/32), and a peer's
// allowed IPs are exactly its blocks (Peer.Allowed), possibly none yet:
// WireGuard accepts from a peer only sources in its blocks and sends
// there only packets for them.
//
// Each network's whole subnet is routed through jaco0 (Config.Routes),
// with the node's address in that network as the source, so what the
// node itself sends there comes from inside its block, the only sources
// its peers accept from it. Traffic for a
// peer just removed, or for a block no peer holds, is then dropped by
// WireGuard (no peer's allowed IPs match) instead of following the
// default route out in clear. A peer block no route covers gets a route
// of its own, with no source. Routes are marked with their own protocol
// number, so a sync removes only its own. An endpoint inside what the
// link routes is refused: WireGuard would send its own packets into the
// tunnel.
//
// # MTU
//
// WireGuard adds up to 80 bytes to each packet (outer IPv6 40, UDP 8,
// WireGuard data header 16, Poly1305 tag 16; 60 over IPv4). The link's
// MTU defaults to the underlay's minus 80, the underlay's being the
// smallest MTU of the links the peers' endpoints are routed through, so an
// encapsulated full-size packet never needs fragmenting on the underlay.
//
// # The private key
//
// Each node makes its own key pair (GeneratePrivateKey) and publishes only
// the public key. The private key never leaves the node: PrivateKey prints
// and logs as "[redacted]" and refuses to marshal, and it is stored by
// SaveKey, sealed with the same Sealer as the node's TLS key under
// autolock (docs/design.md §13), in clear otherwise, as a worker's TLS key
// is.
package overlay
