package overlay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"
)

// Config is the whole desired state of the link, in the shape of
// docs/adr/0026-overlay-networks.md: each overlay network has its own
// subnet, each node holds a /26 block of every network it runs replicas
// of, and a peer's allowed IPs are its blocks.
type Config struct {
	PrivateKey PrivateKey
	// ListenPort is the UDP port on the underlay; 0 means DefaultListenPort.
	ListenPort int
	// Addresses are this node's own overlay addresses, one per block it
	// holds (198.19.1.1/32 for block 198.19.1.0/26), assigned to the link
	// as given. Empty while the node holds no block.
	Addresses []netip.Prefix
	// Routes are sent through the link: each network's whole subnet, so
	// traffic for a peer just removed is dropped by WireGuard (no peer's
	// allowed IPs match) instead of leaving in clear by the default route.
	Routes []Route
	// MTU of the link; 0 means the underlay's minus Overhead.
	MTU int
	// PersistentKeepalive, when positive, sends a keepalive that often so
	// NAT mappings stay open and handshakes stay fresh.
	PersistentKeepalive time.Duration
	Peers               []Peer
}

// Route is a prefix sent through the link.
type Route struct {
	Dst netip.Prefix
	// Src is the source address host-originated packets take: this
	// node's address in that network, which the peers' allowed IPs
	// accept. Invalid: none set, the kernel picks.
	Src netip.Addr
}

// Peer is another node as the store publishes it.
type Peer struct {
	PublicKey PublicKey
	// Endpoint is the peer's underlay UDP address, host:port; a name is
	// resolved on every Configure.
	Endpoint string
	// Allowed are the peer's blocks: the only sources accepted from it,
	// and where packets for them are sent. Empty while it holds none.
	Allowed []netip.Prefix
}

// resolved is a Config checked and with endpoints resolved, ready to apply.
type resolved struct {
	Config
	endpoints []netip.AddrPort // parallel to Peers
}

// resolve checks cfg and resolves every endpoint.
func resolve(ctx context.Context, cfg Config) (resolved, error) {
	if err := cfg.validate(); err != nil {
		return resolved{}, err
	}
	if cfg.ListenPort == 0 {
		cfg.ListenPort = DefaultListenPort
	}
	r := resolved{Config: cfg, endpoints: make([]netip.AddrPort, len(cfg.Peers))}
	routes := cfg.routes()
	for i, p := range cfg.Peers {
		ap, err := resolveEndpoint(ctx, p.Endpoint)
		if err != nil {
			return resolved{}, fmt.Errorf("peer %s: %w", p.PublicKey, err)
		}
		// An endpoint the link itself routes would send WireGuard's own
		// packets into the tunnel, a loop.
		for _, o := range routes {
			if o.Dst.Contains(ap.Addr()) {
				return resolved{}, fmt.Errorf("peer %s: endpoint %v is inside the overlay (%v)", p.PublicKey, ap, o.Dst)
			}
		}
		r.endpoints[i] = ap
	}
	return r, nil
}

// validate refuses a Config WireGuard or the kernel would apply but route
// wrongly: overlapping blocks would make one peer shadow another, a block
// holding this node's address would send its own traffic to a peer.
func (cfg Config) validate() error {
	if cfg.PrivateKey.IsZero() {
		return errors.New("overlay config: no private key")
	}
	if cfg.ListenPort < 0 || cfg.ListenPort > 65535 {
		return fmt.Errorf("overlay config: listen port %d out of range", cfg.ListenPort)
	}
	if cfg.MTU != 0 && cfg.MTU < minMTU {
		return fmt.Errorf("overlay config: MTU %d is below %d", cfg.MTU, minMTU)
	}
	own := make(map[netip.Addr]bool, len(cfg.Addresses))
	for _, a := range cfg.Addresses {
		switch {
		case !a.IsValid() || !a.Addr().Is4() && !a.Addr().Is6():
			return fmt.Errorf("overlay config: address %v is not an address with a prefix length", a)
		case own[a.Addr()]:
			return fmt.Errorf("overlay config: address %v listed twice", a.Addr())
		}
		own[a.Addr()] = true
	}
	dsts := make(map[netip.Prefix]bool, len(cfg.Routes))
	for _, r := range cfg.Routes {
		switch {
		case !r.Dst.IsValid():
			return fmt.Errorf("overlay config: route %v has no destination prefix", r.Dst)
		case r.Dst != r.Dst.Masked():
			return fmt.Errorf("overlay config: route %v has host bits set", r.Dst)
		case dsts[r.Dst]:
			return fmt.Errorf("overlay config: route %v listed twice", r.Dst)
		case r.Src.IsValid() && !own[r.Src]:
			return fmt.Errorf("overlay config: route %v source %v is not one of this node's addresses", r.Dst, r.Src)
		case r.Src.IsValid() && r.Src.Is4() != r.Dst.Addr().Is4():
			// The kernel would refuse it; say why here instead.
			return fmt.Errorf("overlay config: route %v source %v is of the other address family", r.Dst, r.Src)
		}
		dsts[r.Dst] = true
	}
	self := cfg.PrivateKey.PublicKey()
	seen := make(map[PublicKey]bool, len(cfg.Peers))
	var blocks []peerBlock
	for _, p := range cfg.Peers {
		switch {
		case p.PublicKey == self:
			return fmt.Errorf("overlay config: peer %s is this node", p.PublicKey)
		case seen[p.PublicKey]:
			return fmt.Errorf("overlay config: peer %s listed twice", p.PublicKey)
		}
		seen[p.PublicKey] = true
		for _, b := range p.Allowed {
			if err := cfg.checkBlock(p.PublicKey, b, blocks); err != nil {
				return fmt.Errorf("overlay config: peer %s: %w", p.PublicKey, err)
			}
			blocks = append(blocks, peerBlock{p.PublicKey, b})
		}
	}
	return nil
}

// peerBlock is one allowed prefix and the peer it belongs to.
type peerBlock struct {
	peer  PublicKey
	block netip.Prefix
}

// checkBlock checks one of peer's blocks against this node's addresses
// and the blocks seen before it.
func (cfg Config) checkBlock(peer PublicKey, b netip.Prefix, before []peerBlock) error {
	if !b.IsValid() {
		return fmt.Errorf("block %v is not a prefix", b)
	}
	if b != b.Masked() {
		return fmt.Errorf("block %v has host bits set", b)
	}
	// An own address is a host address inside one of this node's blocks,
	// or, given with a shorter length, stands for the block it masks to.
	for _, a := range cfg.Addresses {
		if b.Overlaps(a.Masked()) {
			return fmt.Errorf("block %v overlaps this node's address %v", b, a)
		}
	}
	for _, o := range before {
		if !o.block.Overlaps(b) {
			continue
		}
		if o.peer == peer {
			return fmt.Errorf("block %v overlaps its own block %v", b, o.block)
		}
		return fmt.Errorf("block %v overlaps another peer's block %v", b, o.block)
	}
	return nil
}

// resolveEndpoint turns host:port into an address, looking a name up.
func resolveEndpoint(ctx context.Context, endpoint string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(endpoint); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	pn, err := net.LookupPort("udp", port)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("endpoint %q: no address", endpoint)
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(pn)), nil
}

// routes is what the link must route: every Route, and each peer block
// no Route covers (with no source: the kernel picks one), sorted.
func (cfg Config) routes() []Route {
	out := slices.Clone(cfg.Routes)
	for _, p := range cfg.Peers {
		for _, b := range p.Allowed {
			if !slices.ContainsFunc(cfg.Routes, func(r Route) bool { return covers(r.Dst, b) }) {
				out = append(out, Route{Dst: b})
			}
		}
	}
	slices.SortFunc(out, func(a, b Route) int {
		return cmp.Or(a.Dst.Addr().Compare(b.Dst.Addr()), cmp.Compare(a.Dst.Bits(), b.Dst.Bits()))
	})
	return out
}

// covers reports whether every address of inner is in outer.
func covers(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}
