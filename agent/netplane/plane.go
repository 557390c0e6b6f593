// Package netplane is a node's network plane past what the agent runs
// (docs/design.md §9, docs/adr/0026-overlay-networks.md): the node's end
// of the overlay, the networks it holds a block of, and the isolation of
// its containers. It coordinates the lower packages: agent/overlay (the
// WireGuard link), agent/netview (the view turned into attachments,
// records and rules), agent/dns (a server on each gateway),
// agent/netrules (the overlay's nftables table) and agent/isolation (the
// containers' ruleset).
//
// A Plane is fed by the agent's session (FollowOverlay, FollowNetworks,
// Disconnected), hands the runtimes their attachments (it is an
// exec.Networks) and says what the node's description and
// AgentService.OverlayStatus tell of it. Run owns its goroutines. It
// knows nothing of the daemon: the node hands it the key file's path and
// sealing, and wires it to the agent and the runtimes.
package netplane

import (
	"context"
	"log/slog"
	"sync"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/overlay"
	"github.com/jaco-project/jaco/api"
)

// Config is what a Plane is made of.
type Config struct {
	// NodeID names the node's table of overlay rules
	// (netview.TableName).
	NodeID string
	// KeyPath is the file of the node's overlay private key, made at the
	// first start; the key never leaves the node.
	KeyPath string
	// Sealer, when set, is asked once, by New, what the key file is
	// sealed with: the node's data keys while autolock is on, as its TLS
	// key is (docs/design.md §13); nil keeps it in clear.
	Sealer func() (overlay.Sealer, error)
	// NoOverlay keeps the node off the overlay (jacod --overlay=false):
	// it publishes its overlay unavailable and opens no link.
	NoOverlay bool
	// ListenPort is the UDP port of the overlay link (0:
	// overlay.DefaultListenPort; docs/adr/0063-overlay-port.md), Interface
	// its name (empty: overlay.DefaultName).
	ListenPort int
	Interface  string
	// Redescribe, when set, is called when what Describe says changes
	// (the link turned broken or works again), for the agent to send the
	// node's description again (agent.Agent.Redescribe). It must not
	// block.
	Redescribe func()
	Logger     *slog.Logger
}

// Plane is a node's network plane. Make it with New, run it with Run.
type Plane struct {
	link *overlayLink
	nets *networks
}

var _ exec.Networks = (*Plane)(nil)

// New loads (or makes) the node's overlay key and so knows what the node
// publishes: its key and port, or why it can have no overlay (the
// scheduler then places no networked replica here). It opens no link,
// loads no rules and serves no DNS yet: the link opens once the node
// holds a block of some network, and Run applies what the session brings.
func New(cfg Config) *Plane {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Plane{link: openOverlay(cfg, log), nets: newNetworks(log, cfg.NodeID)}
}

// Run applies what the session brings to the overlay link and to the
// node's networks until ctx ends; then it closes the link and stops the
// DNS servers. The rules stay loaded: the replicas go on talking while
// jacod is down. Run once.
func (p *Plane) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { p.link.run(ctx) })
	p.nets.run(ctx)
	wg.Wait()
}

// FollowOverlay takes the store's latest word on this node and the other
// nodes' overlay ends (agent.Config.Overlay); it never blocks.
func (p *Plane) FollowOverlay(self *api.Node, peers []*api.OverlayPeer) {
	p.link.follow(self, peers)
}

// FollowNetworks takes the store's latest word on the networks the node
// holds a block of and their services' endpoints (agent.Config.Networks);
// it never blocks.
func (p *Plane) FollowNetworks(self *api.Node, networks []*api.Network, endpoints []*api.ServiceEndpoint) {
	p.nets.follow(self, networks, endpoints)
}

// Disconnected is told that the session to the managers ended
// (agent.Config.Disconnected): until the next session message, VIPs and
// ingress ports prefer this node's own replicas. It never blocks.
func (p *Plane) Disconnected() { p.nets.disconnected() }

// Attachment implements exec.Networks: it waits until the node holds a
// block of the network named name, or ctx ends, or a bound passes.
func (p *Plane) Attachment(ctx context.Context, name string) (exec.Attachment, error) {
	return p.nets.attachment(ctx, name)
}

// Describe puts the node's overlay end in its description: the published
// one, or unavailable, saying why, while the link keeps failing.
func (p *Plane) Describe(d *api.NodeDescription) { d.Overlay = p.link.describe() }

// OverlayStatus is the overlay link as it runs, for
// AgentService.OverlayStatus.
func (p *Plane) OverlayStatus(ctx context.Context) (*api.OverlayStatusResponse, error) {
	return p.link.status(ctx)
}
