package overlay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// device is what differs between the kernel's WireGuard and wireguard-go:
// both take a wgtypes.Config and report a wgtypes.Device, so the diff
// against the desired state (link.Configure) is written once.
type device interface {
	apply(wgtypes.Config) error
	state() (*wgtypes.Device, error)
	// close stops the device and removes its interface.
	close() error
}

// link is the Link both implementations share: the WireGuard device plus
// the interface's addresses, MTU and routes, set over netlink.
type link struct {
	name string
	kind Kind
	open func(name string) (device, error)

	mu     sync.Mutex // serialises Configure, Peers and Close
	dev    device     // nil after the interface vanished and could not be made again
	closed bool
}

var errClosed = errors.New("overlay link is closed")

func (l *link) Kind() Kind { return l.kind }

func (l *link) Configure(ctx context.Context, cfg Config) error {
	r, err := resolve(ctx, cfg)
	if err != nil {
		return err
	}
	mtu := r.MTU
	if mtu == 0 {
		mtu = max(underlayMTU(r.endpoints)-Overhead, minMTU)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	if err := l.ensure(); err != nil {
		return fmt.Errorf("configure %s: %w", l.name, err)
	}
	cur, err := l.dev.state()
	if err != nil {
		return fmt.Errorf("configure %s: read device: %w", l.name, err)
	}
	if err := l.dev.apply(diff(cur, r)); err != nil {
		return fmt.Errorf("configure %s: %w", l.name, err)
	}
	if err := syncInterface(l.name, r.Addresses, mtu, r.routes()); err != nil {
		return fmt.Errorf("configure %s: %w", l.name, err)
	}
	return nil
}

func (l *link) Peers(ctx context.Context) ([]PeerStatus, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errClosed
	}
	if l.dev == nil {
		return nil, fmt.Errorf("peers of %s: %w", l.name, errGone)
	}
	d, err := l.dev.state()
	if err != nil {
		return nil, fmt.Errorf("peers of %s: %w", l.name, err)
	}
	out := make([]PeerStatus, 0, len(d.Peers))
	for _, p := range d.Peers {
		ps := PeerStatus{
			PublicKey:     p.PublicKey,
			LastHandshake: p.LastHandshakeTime,
			RxBytes:       p.ReceiveBytes,
			TxBytes:       p.TransmitBytes,
		}
		if p.Endpoint != nil {
			ps.Endpoint = p.Endpoint.AddrPort()
			ps.Endpoint = netip.AddrPortFrom(ps.Endpoint.Addr().Unmap(), ps.Endpoint.Port())
		}
		for _, n := range p.AllowedIPs {
			if pf, ok := prefixOf(n); ok {
				ps.AllowedPrefixes = append(ps.AllowedPrefixes, pf)
			}
		}
		out = append(out, ps)
	}
	return out, nil
}

func (l *link) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.dev == nil {
		return nil
	}
	if err := l.dev.close(); err != nil {
		return fmt.Errorf("close %s: %w", l.name, err)
	}
	return nil
}

var errGone = errors.New("the interface vanished and could not be made again")

// ensure makes the interface anew when it has vanished (someone deleted
// it; wireguard-go then stops by itself), so that a caller following the
// store repairs the link with its next Configure. The old device is
// closed first: its goroutines end with it.
func (l *link) ensure() error {
	if l.dev != nil {
		_, err := netlink.LinkByName(l.name)
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return nil // there, or a netlink error the next step reports
		}
		slog.Warn("overlay interface vanished; making it again", "link", l.name, "kind", l.kind)
		if err := l.dev.close(); err != nil {
			slog.Warn("overlay: close the vanished interface's device", "link", l.name, "err", err)
		}
		l.dev = nil
	}
	dev, err := l.open(l.name)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	l.dev = dev
	return nil
}

// diff is the change that takes the device from cur to r. The key and port
// are written only when they differ (wireguard-go rebinds its socket on
// every listen_port, dropping packets in flight); listed peers are updated
// in place so their sessions survive, the others removed.
func diff(cur *wgtypes.Device, r resolved) wgtypes.Config {
	var c wgtypes.Config
	if cur.PrivateKey != r.PrivateKey.k {
		c.PrivateKey = &r.PrivateKey.k
	}
	if cur.ListenPort != r.ListenPort {
		c.ListenPort = &r.ListenPort
	}
	keepalive := max(r.PersistentKeepalive, 0)
	want := make(map[PublicKey]bool, len(r.Peers))
	for i, p := range r.Peers {
		want[p.PublicKey] = true
		allowed := make([]net.IPNet, 0, len(p.Allowed))
		for _, b := range p.Allowed {
			allowed = append(allowed, ipNet(b))
		}
		c.Peers = append(c.Peers, wgtypes.PeerConfig{
			PublicKey:                   p.PublicKey,
			Endpoint:                    net.UDPAddrFromAddrPort(r.endpoints[i]),
			PersistentKeepaliveInterval: &keepalive,
			ReplaceAllowedIPs:           true,
			AllowedIPs:                  allowed,
		})
	}
	for _, p := range cur.Peers {
		if !want[p.PublicKey] {
			c.Peers = append(c.Peers, wgtypes.PeerConfig{PublicKey: p.PublicKey, Remove: true})
		}
	}
	return c
}

func ipNet(p netip.Prefix) net.IPNet {
	p = p.Masked()
	return net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func prefixOf(n net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, bits := n.Mask.Size()
	a = a.Unmap()
	if bits != a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}
