package overlay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"
)

// DefaultName is the overlay interface every node runs (issue 13).
const DefaultName = "jaco0"

// DefaultListenPort is WireGuard's customary UDP port.
const DefaultListenPort = 51820

// Overhead is what WireGuard adds to every packet over an IPv6 underlay,
// the worst case: outer IPv6 header 40, UDP 8, WireGuard data header 16
// (type, receiver index, counter) and the Poly1305 tag 16. Over IPv4 it
// is 60; taking 80 keeps one MTU right for both.
const Overhead = 80

// fallbackUnderlayMTU is assumed when no peer's route names a link.
const fallbackUnderlayMTU = 1500

// minMTU is the smallest MTU the overlay accepts: IPv6's minimum, so the
// link can carry any packet the node's stack may send.
const minMTU = 1280

// Link is this node's WireGuard interface.
type Link interface {
	// Configure makes the interface match cfg: key, port, address, MTU and
	// exactly cfg.Peers (peers not listed are removed, listed ones keep
	// their session). Calling it again with the same cfg changes nothing,
	// so the caller applies the store's whole view on every change.
	Configure(ctx context.Context, cfg Config) error
	// Peers reports each peer's state as WireGuard sees it.
	Peers(ctx context.Context) ([]PeerStatus, error)
	// Kind says which implementation runs: KindKernel or KindUserspace.
	Kind() Kind
	// Close removes the interface and stops everything it runs.
	Close() error
}

// Kind names a Link implementation.
type Kind string

// The implementations.
const (
	KindKernel    Kind = "kernel"
	KindUserspace Kind = "userspace"
)

// Config is the whole desired state of the link.
type Config struct {
	PrivateKey PrivateKey
	// ListenPort is the UDP port on the underlay; 0 means DefaultListenPort.
	ListenPort int
	// Address is this node's overlay address with its subnet's prefix
	// length (198.19.1.1/24): assigned to the link as it is.
	Address netip.Prefix
	// Pool, when valid, is routed through the link as a whole, so traffic
	// for a peer that was just removed is dropped by WireGuard rather than
	// leaving in clear through the default route.
	Pool netip.Prefix
	// MTU of the link; 0 means the underlay's minus Overhead.
	MTU int
	// PersistentKeepalive, when positive, sends a keepalive that often so
	// NAT mappings stay open and handshakes stay fresh.
	PersistentKeepalive time.Duration
	Peers               []Peer
}

// Peer is another node as the store publishes it.
type Peer struct {
	PublicKey PublicKey
	// Endpoint is the peer's underlay UDP address, host:port; a name is
	// resolved on every Configure.
	Endpoint string
	// AllowedPrefix is the peer's overlay subnet: the only sources accepted
	// from it, and where packets for it are sent.
	AllowedPrefix netip.Prefix
}

// PeerStatus is one peer's state on the link.
type PeerStatus struct {
	PublicKey       PublicKey
	Endpoint        netip.AddrPort // the last one it was heard from
	AllowedPrefixes []netip.Prefix
	LastHandshake   time.Time // zero before the first
	RxBytes         int64
	TxBytes         int64
}

// Options choose how Open makes the link.
type Options struct {
	// Name of the interface; "" means DefaultName.
	Name string
	// Kind forces an implementation; "" picks the kernel's when it has
	// WireGuard (probed once per process), else userspace.
	Kind Kind
}

// Open creates the interface and returns it unconfigured: down, no
// address, no peers. A kernel link left by an earlier run is adopted as
// it is, sessions included, until the first Configure.
func Open(opts Options) (Link, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	kind := opts.Kind
	if kind == "" {
		kind = KindUserspace
		if KernelAvailable() {
			kind = KindKernel
		}
	}
	var open func(string) (device, error)
	switch kind {
	case KindKernel:
		open = openKernel
	case KindUserspace:
		open = openUserspace
	default:
		return nil, fmt.Errorf("overlay: unknown link kind %q", kind)
	}
	dev, err := open(opts.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &link{name: opts.Name, kind: kind, dev: dev, open: open}, nil
}

// ErrUnavailable wraps every failure of Open to make the interface: the
// node can run no overlay, which the agent reports as overlay_unavailable.
var ErrUnavailable = errors.New("overlay unavailable")

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
	for i, p := range cfg.Peers {
		ap, err := resolveEndpoint(ctx, p.Endpoint)
		if err != nil {
			return resolved{}, fmt.Errorf("peer %s: %w", p.PublicKey, err)
		}
		// An endpoint the link itself routes would send WireGuard's own
		// packets into the tunnel, a loop.
		for _, o := range cfg.routes() {
			if o.Contains(ap.Addr()) {
				return resolved{}, fmt.Errorf("peer %s: endpoint %v is inside the overlay (%v)", p.PublicKey, ap, o)
			}
		}
		r.endpoints[i] = ap
	}
	return r, nil
}

// validate refuses a Config WireGuard would apply but route wrongly:
// overlapping subnets would make one peer shadow another.
func (cfg Config) validate() error {
	if cfg.PrivateKey.IsZero() {
		return errors.New("overlay config: no private key")
	}
	if cfg.ListenPort < 0 || cfg.ListenPort > 65535 {
		return fmt.Errorf("overlay config: listen port %d out of range", cfg.ListenPort)
	}
	if !cfg.Address.IsValid() || !cfg.Address.Addr().Is4() && !cfg.Address.Addr().Is6() {
		return fmt.Errorf("overlay config: address %v is not an address with a prefix length", cfg.Address)
	}
	if cfg.MTU != 0 && cfg.MTU < minMTU {
		return fmt.Errorf("overlay config: MTU %d is below %d", cfg.MTU, minMTU)
	}
	own := cfg.Address.Masked()
	if cfg.Pool.IsValid() && !cfg.Pool.Contains(cfg.Address.Addr()) {
		return fmt.Errorf("overlay config: address %v is outside the pool %v", cfg.Address, cfg.Pool)
	}
	self := cfg.PrivateKey.PublicKey()
	seen := make(map[PublicKey]bool, len(cfg.Peers))
	var prefixes []netip.Prefix
	for _, p := range cfg.Peers {
		switch {
		case p.PublicKey == self:
			return fmt.Errorf("overlay config: peer %s is this node", p.PublicKey)
		case seen[p.PublicKey]:
			return fmt.Errorf("overlay config: peer %s listed twice", p.PublicKey)
		case !p.AllowedPrefix.IsValid():
			return fmt.Errorf("overlay config: peer %s has no subnet", p.PublicKey)
		case p.AllowedPrefix != p.AllowedPrefix.Masked():
			return fmt.Errorf("overlay config: peer %s subnet %v has host bits set", p.PublicKey, p.AllowedPrefix)
		case p.AllowedPrefix.Overlaps(own):
			return fmt.Errorf("overlay config: peer %s subnet %v overlaps this node's %v", p.PublicKey, p.AllowedPrefix, own)
		}
		for _, q := range prefixes {
			if q.Overlaps(p.AllowedPrefix) {
				return fmt.Errorf("overlay config: peer %s subnet %v overlaps another peer's %v", p.PublicKey, p.AllowedPrefix, q)
			}
		}
		seen[p.PublicKey] = true
		prefixes = append(prefixes, p.AllowedPrefix)
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

// routes is what the link must route: the pool when there is one, and
// each peer subnet it does not cover.
func (cfg Config) routes() []netip.Prefix {
	var out []netip.Prefix
	if cfg.Pool.IsValid() {
		out = append(out, cfg.Pool.Masked())
	}
	for _, p := range cfg.Peers {
		if !cfg.Pool.IsValid() || !cfg.Pool.Contains(p.AllowedPrefix.Addr()) || p.AllowedPrefix.Bits() < cfg.Pool.Bits() {
			out = append(out, p.AllowedPrefix)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}
