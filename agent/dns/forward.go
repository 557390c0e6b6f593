package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
)

// upstreams are the host's resolvers, read from its resolv.conf. The file
// is read again when its modification time changes, so a host whose
// resolvers change (DHCP, VPN) is followed without restarting the agent.
type upstreams struct {
	path string
	port string
	self string // the server's own address, never forwarded to

	mu      sync.Mutex
	modTime time.Time
	servers []string
	err     error
}

func (u *upstreams) list() ([]string, error) {
	fi, err := os.Stat(u.path)
	if err != nil {
		return nil, fmt.Errorf("upstream resolvers: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.servers != nil && fi.ModTime().Equal(u.modTime) {
		return u.servers, u.err
	}
	u.modTime = fi.ModTime()
	cc, err := mdns.ClientConfigFromFile(u.path)
	if err != nil {
		u.servers, u.err = []string{}, fmt.Errorf("upstream resolvers: %w", err)
		return nil, u.err
	}
	port := u.port
	if port == "" {
		port = cc.Port
	}
	servers := make([]string, 0, len(cc.Servers))
	for _, s := range cc.Servers {
		addr := net.JoinHostPort(s, port)
		if addr == u.self {
			continue // a loop: the host resolves through this server
		}
		servers = append(servers, addr)
	}
	u.servers, u.err = servers, nil
	if len(servers) == 0 {
		u.err = fmt.Errorf("upstream resolvers: none in %s", u.path)
	}
	return u.servers, u.err
}

var errNoUpstream = errors.New("no upstream answered")

// forward asks the upstream resolvers in turn, over UDP and again over
// TCP when the answer is truncated, until one answers or ctx ends. Any
// answer an upstream gives, NXDOMAIN included, is passed back as is.
func forward(ctx context.Context, servers []string, req *mdns.Msg) (*mdns.Msg, error) {
	q := req.Copy()
	q.Id = mdns.Id() // the replica's ID stays between it and this server
	var errs []error
	for _, s := range servers {
		r, err := exchange(ctx, "udp", s, q)
		if err == nil && r.Truncated {
			r, err = exchange(ctx, "tcp", s, q)
		}
		if err == nil {
			r.Id = req.Id
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", errNoUpstream, errors.Join(errs...))
}

func exchange(ctx context.Context, network, server string, q *mdns.Msg) (*mdns.Msg, error) {
	c := &mdns.Client{Net: network}
	if network == "udp" {
		// The whole answer the upstream may send; it is cut to the
		// replica's size before it goes back.
		c.UDPSize = mdns.DefaultMsgSize
	}
	co, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer co.Close()
	// The client obeys ctx's deadline only; closing the connection also
	// ends the exchange when the server shuts down.
	stop := context.AfterFunc(ctx, func() { co.Close() })
	defer stop()
	r, _, err := c.ExchangeWithConnContext(ctx, q, co)
	return r, err
}
