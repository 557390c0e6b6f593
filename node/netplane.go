package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/jaco-project/jaco/agent/dns"
	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/netrules"
	"github.com/jaco-project/jaco/agent/netview"
	"github.com/jaco-project/jaco/api"
)

// attachmentWait bounds how long a replica waits for its node's block of
// a network: the leader writes it within milliseconds of the placement,
// so a longer wait means the node lost its session; the replica fails and
// is placed again.
const attachmentWait = 30 * time.Second

// dnsPort is where the node's DNS server answers replicas, on each of its
// gateways (their resolv.conf cannot name another port).
const dnsPort = 53

// netPlane is this node's side of its overlay networks past the link
// (docs/adr/0026): it keeps the latest view the session brought, hands
// runtimes their attachments, and runs a DNS server on the node's
// gateway of each network, answering from the view. One goroutine (run)
// applies views; Attachment waits on the view.
type netPlane struct {
	log        *slog.Logger
	resolvConf string // the host's, for names the server does not own
	dnsPort    int

	mu      sync.Mutex
	view    netview.View
	cutOff  bool          // the session ended since view came
	changed chan struct{} // closed and replaced by each new view

	kick chan struct{} // run has a newer view to apply

	// Owned by run.
	servers map[netip.Addr]*dns.Server
	serving sync.WaitGroup
	rules   overlayRules
	loaded  bool // rules hold a state (the table exists)
}

// overlayRules is what the plane needs of agent/netrules (tests record
// instead of loading rules into the test machine's kernel).
type overlayRules interface {
	Apply(ctx context.Context, s netrules.State) error
	Close() error
}

func newNetPlane(log *slog.Logger, nodeID string) *netPlane {
	log = log.With("component", "networks")
	return &netPlane{log: log, resolvConf: "/etc/resolv.conf", dnsPort: dnsPort,
		changed: make(chan struct{}), kick: make(chan struct{}, 1), servers: map[netip.Addr]*dns.Server{},
		rules: netrules.New(netview.TableName(nodeID), netrules.WithLogger(log))}
}

// follow takes the store's latest word on the node's networks; it never
// blocks (agent.Config.Networks).
func (p *netPlane) follow(self *api.Node, networks []*api.Network, endpoints []*api.ServiceEndpoint) {
	p.mu.Lock()
	p.view = netview.View{Node: self, Networks: networks, Endpoints: endpoints}
	wasCutOff := p.cutOff
	p.cutOff = false
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	if wasCutOff {
		p.log.Info("in session again: VIPs and ingress ports spread over every replica")
	}
	p.wake()
}

// disconnected is told that the session to the managers ended
// (agent.Config.Disconnected); it never blocks. Until the next session
// message the view is stale: other nodes' replicas it lists may be gone,
// or out of reach if this node is the one cut off, while this node's own
// are known to run. So VIPs and ingress ports spread over this node's
// replicas of a service where it has any (netview.PreferLocal).
func (p *netPlane) disconnected() {
	p.mu.Lock()
	was := p.cutOff
	p.cutOff = true
	p.mu.Unlock()
	if !was {
		p.log.Warn("session to the managers lost: VIPs and ingress ports prefer this node's own replicas until it is back")
	}
	p.wake()
}

func (p *netPlane) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Attachment implements exec.Networks: it waits until the view holds the
// node's block of the network.
func (p *netPlane) Attachment(ctx context.Context, name string) (exec.Attachment, error) {
	ctx, cancel := context.WithTimeout(ctx, attachmentWait)
	defer cancel()
	for {
		p.mu.Lock()
		att, ok := netview.Attachments(p.view, 0)[name]
		changed := p.changed
		p.mu.Unlock()
		if ok {
			return att, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return exec.Attachment{}, fmt.Errorf("network %s: this node holds no block of it after %s: %w", name, attachmentWait, ctx.Err())
		}
	}
}

// snapshot is the view and which backends its rules spread over.
func (p *netPlane) snapshot() (netview.View, netview.Backends) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutOff {
		return p.view, netview.PreferLocal
	}
	return p.view, netview.AllReplicas
}

// run applies each new view until ctx ends, then stops the DNS servers.
// A view that cannot be applied whole (a gateway not yet on the node) is
// tried again shortly.
func (p *netPlane) run(ctx context.Context) {
	defer p.stop()
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-retry.C:
		}
		if err := p.apply(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("apply the networks' view; trying again", "err", err)
			retry.Reset(time.Second)
		}
	}
}

// apply loads the view's rules (networks apart, VIPs and the ingress
// mesh's ports spread) and runs a DNS server on each gateway of the view
// (and on no other), all answering from its records. A node that never
// had a network loads no rules; the rules stay when jacod stops, since
// the replicas go on talking.
func (p *netPlane) apply(ctx context.Context) error {
	v, backends := p.snapshot()
	var errs []error
	switch st := netview.Rules(v, backends); {
	case len(st.Networks) > 0:
		if err := p.rules.Apply(ctx, st); err != nil {
			errs = append(errs, err)
		} else {
			p.loaded = true
		}
	case p.loaded:
		if err := p.rules.Close(); err != nil {
			errs = append(errs, err)
		} else {
			p.loaded = false
		}
	}
	want := map[netip.Addr]bool{}
	for _, gw := range netview.Gateways(v) {
		want[gw] = true
	}
	for gw, s := range p.servers {
		if !want[gw] {
			_ = s.Close()
			delete(p.servers, gw)
		}
	}
	recs := netview.Records(v)
	for gw := range want {
		s := p.servers[gw]
		if s == nil {
			var err error
			if s, err = p.serve(ctx, gw); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := s.SetRecords(recs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// serve starts a DNS server on gw.
func (p *netPlane) serve(ctx context.Context, gw netip.Addr) (*dns.Server, error) {
	s, err := dns.New(dns.Config{Addr: net.JoinHostPort(gw.String(), strconv.Itoa(p.dnsPort)),
		ResolvConf: p.resolvConf, Logger: p.log})
	if err != nil {
		return nil, err
	}
	p.servers[gw] = s
	p.serving.Go(func() {
		if err := s.Run(ctx); err != nil && ctx.Err() == nil {
			p.log.Debug("dns server ended", "address", s.Addr(), "err", err)
		}
	})
	p.log.Info("dns server answering replicas", "address", s.Addr())
	return s, nil
}

func (p *netPlane) stop() {
	for gw, s := range p.servers {
		_ = s.Close()
		delete(p.servers, gw)
	}
	p.serving.Wait()
}
