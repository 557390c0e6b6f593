package netplane

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

// networks is this node's side of its overlay networks past the link
// (docs/adr/0026): it keeps the latest view the session brought, hands
// runtimes their attachments, and runs a DNS server on the node's
// gateway of each network, answering from the view. One goroutine (run)
// applies views; attachment waits on the view.
type networks struct {
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

// overlayRules is what networks needs of agent/netrules (tests record
// instead of loading rules into the test machine's kernel).
type overlayRules interface {
	Apply(ctx context.Context, s netrules.State) error
	Close() error
}

func newNetworks(log *slog.Logger, nodeID string) *networks {
	log = log.With("component", "networks")
	return &networks{log: log, resolvConf: "/etc/resolv.conf", dnsPort: dnsPort,
		changed: make(chan struct{}), kick: make(chan struct{}, 1), servers: map[netip.Addr]*dns.Server{},
		rules: netrules.New(netview.TableName(nodeID), netrules.WithLogger(log))}
}

// follow takes the store's latest word on the node's networks; it never
// blocks (Plane.FollowNetworks).
func (nw *networks) follow(self *api.Node, networks []*api.Network, endpoints []*api.ServiceEndpoint) {
	nw.mu.Lock()
	nw.view = netview.View{Node: self, Networks: networks, Endpoints: endpoints}
	wasCutOff := nw.cutOff
	nw.cutOff = false
	close(nw.changed)
	nw.changed = make(chan struct{})
	nw.mu.Unlock()
	if wasCutOff {
		nw.log.Info("in session again: VIPs and ingress ports spread over every replica")
	}
	nw.wake()
}

// disconnected is told that the session to the managers ended
// (Plane.Disconnected); it never blocks. Until the next session
// message the view is stale: other nodes' replicas it lists may be gone,
// or out of reach if this node is the one cut off, while this node's own
// are known to run. So VIPs and ingress ports spread over this node's
// replicas of a service where it has any (netview.PreferLocal).
func (nw *networks) disconnected() {
	nw.mu.Lock()
	was := nw.cutOff
	nw.cutOff = true
	nw.mu.Unlock()
	if !was {
		nw.log.Warn("session to the managers lost: VIPs and ingress ports prefer this node's own replicas until it is back")
	}
	nw.wake()
}

func (nw *networks) wake() {
	select {
	case nw.kick <- struct{}{}:
	default:
	}
}

// attachment waits until the view holds the node's block of the network
// (Plane.Attachment).
func (nw *networks) attachment(ctx context.Context, name string) (exec.Attachment, error) {
	ctx, cancel := context.WithTimeout(ctx, attachmentWait)
	defer cancel()
	for {
		nw.mu.Lock()
		att, ok := netview.Attachments(nw.view, 0)[name]
		changed := nw.changed
		nw.mu.Unlock()
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
func (nw *networks) snapshot() (netview.View, netview.Backends) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.cutOff {
		return nw.view, netview.PreferLocal
	}
	return nw.view, netview.AllReplicas
}

// run applies each new view until ctx ends, then stops the DNS servers.
// A view that cannot be applied whole (a gateway not yet on the node) is
// tried again shortly.
func (nw *networks) run(ctx context.Context) {
	defer nw.stop()
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-nw.kick:
		case <-retry.C:
		}
		if err := nw.apply(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			nw.log.Warn("apply the networks' view; trying again", "err", err)
			retry.Reset(time.Second)
		}
	}
}

// apply loads the view's rules (networks apart, VIPs and the ingress
// mesh's ports spread) and runs a DNS server on each gateway of the view
// (and on no other), all answering from its records. A node that never
// had a network loads no rules; the rules stay when jacod stops, since
// the replicas go on talking.
func (nw *networks) apply(ctx context.Context) error {
	v, backends := nw.snapshot()
	var errs []error
	switch st := netview.Rules(v, backends); {
	case len(st.Networks) > 0:
		if err := nw.rules.Apply(ctx, st); err != nil {
			errs = append(errs, err)
		} else {
			nw.loaded = true
		}
	case nw.loaded:
		if err := nw.rules.Close(); err != nil {
			errs = append(errs, err)
		} else {
			nw.loaded = false
		}
	}
	want := map[netip.Addr]bool{}
	for _, gw := range netview.Gateways(v) {
		want[gw] = true
	}
	for gw, s := range nw.servers {
		if !want[gw] {
			_ = s.Close()
			delete(nw.servers, gw)
		}
	}
	recs := netview.Records(v)
	for gw := range want {
		s := nw.servers[gw]
		if s == nil {
			var err error
			if s, err = nw.serve(ctx, gw); err != nil {
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
func (nw *networks) serve(ctx context.Context, gw netip.Addr) (*dns.Server, error) {
	s, err := dns.New(dns.Config{Addr: net.JoinHostPort(gw.String(), strconv.Itoa(nw.dnsPort)),
		ResolvConf: nw.resolvConf, Logger: nw.log})
	if err != nil {
		return nil, fmt.Errorf("dns server on %s: %w", gw, err)
	}
	nw.servers[gw] = s
	nw.serving.Go(func() {
		if err := s.Run(ctx); err != nil && ctx.Err() == nil {
			nw.log.Debug("dns server ended", "address", s.Addr(), "err", err)
		}
	})
	nw.log.Info("dns server answering replicas", "address", s.Addr())
	return s, nil
}

func (nw *networks) stop() {
	for gw, s := range nw.servers {
		_ = s.Close()
		delete(nw.servers, gw)
	}
	nw.serving.Wait()
}
