package overlay

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// DefaultName is the overlay interface every node runs (docs/adr/0026).
const DefaultName = "jaco0"

// DefaultListenPort is the overlay's UDP port: not WireGuard's customary
// 51820, which the operator's own VPN or a WireGuard service published
// through the routing mesh wants on the same nodes (docs/adr/0063).
const DefaultListenPort = 51871

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
	// Configure makes the interface match cfg: key, port, addresses,
	// routes, MTU and exactly cfg.Peers (peers not listed are removed, listed ones keep
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
