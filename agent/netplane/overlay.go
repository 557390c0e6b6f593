package netplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/agent/overlay"
	"github.com/jaco-project/jaco/api"
)

// overlayKeepalive keeps handshakes fresh, so a peer's last handshake
// says whether it is reachable, and NAT mappings open.
const overlayKeepalive = 25 * time.Second

// overlayRetry is how soon a link that failed to configure is tried again.
const overlayRetry = 2 * time.Second

// overlayBrokenAfter is how long the link may keep failing to configure
// before the node reports its overlay unavailable (and so leaves the
// other nodes' peers and the scheduler's choices for networked
// replicas); one failed attempt is not enough, a restarting device is.
const overlayBrokenAfter = 10 * time.Second

// overlayLink is this node's end of the overlay (docs/adr/0026): its
// key, and the link, opened once the node holds a block of some network
// (a node running no networked replica needs none), configured from the
// latest session message by one goroutine that owns it.
type overlayLink struct {
	log      *slog.Logger
	key      overlay.PrivateKey
	port     int
	name     string
	endpoint *api.OverlayEndpoint

	want chan overlayWant // latest wins
	// redescribe, when set, makes the agent send the node's description
	// again (its overlay turned broken or healthy).
	redescribe func()

	mu      sync.Mutex
	link    overlay.Link // nil until the first block
	applied overlayWant
	broken  string // why the link keeps failing; "" while it works
}

// overlayWant is what the store says the link must be.
type overlayWant struct {
	self  *api.Node
	peers []*api.OverlayPeer
}

// openOverlay loads (or makes) the node's overlay key and says what the
// node publishes: its key and port, or why it can have no overlay (the
// scheduler then places no networked replica here). It opens no link yet.
func openOverlay(cfg Config, log *slog.Logger) *overlayLink {
	o := &overlayLink{log: log.With("component", "overlay"), port: cfg.ListenPort, name: cfg.Interface,
		want: make(chan overlayWant, 1), redescribe: cfg.Redescribe}
	if o.port == 0 {
		o.port = overlay.DefaultListenPort
	}
	unavailable := func(err error) *overlayLink {
		o.log.Warn("overlay unavailable; this node runs no replica on a network", "err", err)
		o.endpoint = &api.OverlayEndpoint{Unavailable: true, Message: err.Error()}
		return o
	}
	if cfg.NoOverlay {
		return unavailable(errors.New("the overlay is turned off on this node (jacod --overlay=false)"))
	}
	kind, err := probeOverlay()
	if err != nil {
		return unavailable(err)
	}
	var sealer overlay.Sealer
	if cfg.Sealer != nil {
		if sealer, err = cfg.Sealer(); err != nil {
			return unavailable(fmt.Errorf("seal the overlay key: %w", err))
		}
	}
	key, _, err := overlay.LoadOrCreateKey(cfg.KeyPath, sealer)
	if err != nil {
		return unavailable(fmt.Errorf("overlay key: %w", err))
	}
	o.key = key
	pub := key.PublicKey()
	o.endpoint = &api.OverlayEndpoint{PublicKey: pub[:], Port: uint32(o.port), Kind: string(kind)}
	return o
}

// probeOverlay says which WireGuard this node can run: the kernel's when
// it can make a wireguard link, else wireguard-go, which needs a TUN
// device.
func probeOverlay() (overlay.Kind, error) {
	if overlay.KernelAvailable() {
		return overlay.KindKernel, nil
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("no WireGuard in the kernel and no TUN device for wireguard-go: %w", err)
	}
	f.Close()
	return overlay.KindUserspace, nil
}

// follow hands the link the store's latest view; it never blocks.
func (o *overlayLink) follow(self *api.Node, peers []*api.OverlayPeer) {
	if o.endpoint.GetUnavailable() {
		return
	}
	w := overlayWant{self: self, peers: peers}
	for {
		select {
		case o.want <- w:
			return
		default:
		}
		select {
		case <-o.want: // drop the older view
		default:
		}
	}
}

// run applies each view to the link until ctx ends, then closes it.
func (o *overlayLink) run(ctx context.Context) {
	defer o.close()
	var pending *overlayWant
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	var failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-o.want:
			pending = &w
		case <-retry.C:
		}
		if pending == nil {
			continue
		}
		if err := o.apply(ctx, *pending); err != nil {
			if ctx.Err() != nil {
				return
			}
			o.log.Warn("configure the overlay link; trying again", "err", err)
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) >= overlayBrokenAfter {
				o.setBroken(err.Error())
			}
			retry.Reset(overlayRetry)
			continue
		}
		failingSince = time.Time{}
		o.setBroken("")
		pending = nil
	}
}

// setBroken records why the link keeps failing ("" once it works) and,
// on a change, has the agent describe the node again: node ls shows
// overlay_unavailable with the reason, and the cluster stops counting on
// this node's overlay.
func (o *overlayLink) setBroken(why string) {
	o.mu.Lock()
	changed := o.broken != why
	o.broken = why
	o.mu.Unlock()
	if !changed {
		return
	}
	if why != "" {
		o.log.Error("the overlay link keeps failing; reporting the node's overlay unavailable", "err", why)
	} else {
		o.log.Info("the overlay link works again")
	}
	if o.redescribe != nil {
		o.redescribe()
	}
}

// describe is the node's overlay end for its description: the published
// one, or unavailable while the link is broken.
func (o *overlayLink) describe() *api.OverlayEndpoint {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.broken == "" {
		return o.endpoint
	}
	return &api.OverlayEndpoint{PublicKey: o.endpoint.GetPublicKey(), Port: o.endpoint.GetPort(), Kind: o.endpoint.GetKind(),
		Unavailable: true, Message: "overlay link broken: " + o.broken}
}

// apply makes the link match w, opening it at the node's first block.
func (o *overlayLink) apply(ctx context.Context, w overlayWant) error {
	cfg, err := o.config(w)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.link == nil {
		if len(cfg.Addresses) == 0 {
			o.applied = w
			return nil // no block: nothing routes here yet
		}
		l, err := overlay.Open(overlay.Options{Name: o.name})
		if err != nil {
			return err
		}
		o.link = l
	}
	if err := o.link.Configure(ctx, cfg); err != nil {
		return err
	}
	o.applied = w
	return nil
}

// config is the link's whole state for w: an address and a route per
// block this node holds (the network's subnet through the link, so
// nothing for it leaves in clear), and every peer with its blocks.
func (o *overlayLink) config(w overlayWant) (overlay.Config, error) {
	cfg := overlay.Config{PrivateKey: o.key, ListenPort: o.port, PersistentKeepalive: overlayKeepalive}
	for _, b := range w.self.GetOverlayBlocks() {
		block, err := netip.ParsePrefix(b.GetPrefix())
		if err != nil {
			return cfg, fmt.Errorf("own block %q: %w", b.GetPrefix(), err)
		}
		addr := block.Masked().Addr().Next()
		cfg.Addresses = append(cfg.Addresses, netip.PrefixFrom(addr, addr.BitLen()))
		if subnet, err := netip.ParsePrefix(b.GetSubnet()); err == nil {
			cfg.Routes = append(cfg.Routes, overlay.Route{Dst: subnet.Masked(), Src: addr})
		}
	}
	for _, p := range w.peers {
		if len(p.GetPublicKey()) != 32 {
			continue // checked by the dispatcher; never from it
		}
		peer := overlay.Peer{PublicKey: overlay.PublicKey(p.GetPublicKey()), Endpoint: p.GetEndpoint()}
		for _, a := range p.GetAllowed() {
			pf, err := netip.ParsePrefix(a)
			if err != nil {
				return cfg, fmt.Errorf("peer %s block %q: %w", p.GetNodeId(), a, err)
			}
			peer.Allowed = append(peer.Allowed, pf)
		}
		cfg.Peers = append(cfg.Peers, peer)
	}
	return cfg, nil
}

// status is the link as it runs, for AgentService.OverlayStatus.
func (o *overlayLink) status(ctx context.Context) (*api.OverlayStatusResponse, error) {
	resp := &api.OverlayStatusResponse{Endpoint: o.describe()}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range o.applied.self.GetOverlayBlocks() {
		if block, err := netip.ParsePrefix(b.GetPrefix()); err == nil {
			resp.Addresses = append(resp.Addresses, block.Masked().Addr().Next().String())
		}
	}
	if o.link == nil {
		return resp, nil
	}
	running, err := o.link.Peers(ctx)
	if err != nil {
		return nil, err
	}
	byKey := map[overlay.PublicKey]string{}
	for _, p := range o.applied.peers {
		if len(p.GetPublicKey()) == 32 {
			byKey[overlay.PublicKey(p.GetPublicKey())] = p.GetNodeId()
		}
	}
	for _, p := range running {
		ps := &api.OverlayPeerStatus{NodeId: byKey[p.PublicKey], PublicKey: p.PublicKey[:],
			RxBytes: p.RxBytes, TxBytes: p.TxBytes}
		if p.Endpoint.IsValid() {
			ps.Endpoint = p.Endpoint.String()
		}
		for _, a := range p.AllowedPrefixes {
			ps.Allowed = append(ps.Allowed, a.String())
		}
		if !p.LastHandshake.IsZero() {
			ps.LastHandshake = timestamppb.New(p.LastHandshake)
		}
		resp.Peers = append(resp.Peers, ps)
	}
	slices.SortFunc(resp.Peers, func(a, b *api.OverlayPeerStatus) int { return strings.Compare(a.NodeId, b.NodeId) })
	return resp, nil
}

func (o *overlayLink) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.link == nil {
		return
	}
	if err := o.link.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		o.log.Warn("close the overlay link", "err", err)
	}
	o.link = nil
}
