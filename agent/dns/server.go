package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
)

// Config says where the server listens and where it forwards.
type Config struct {
	// Addr is the host:port the server listens on, over UDP and TCP
	// alike. Port 0 picks a free port, the same for both.
	Addr string
	// ResolvConf is the host's resolv.conf, whose nameservers get the
	// names this server does not own. Default /etc/resolv.conf.
	ResolvConf string
	// UpstreamPort overrides the port of the resolv.conf nameservers
	// (resolv.conf cannot say one). Default: 53.
	UpstreamPort string
	// ForwardTimeout bounds one forwarded query, all upstreams
	// included; after it the replica gets SERVFAIL. Default 2 s, below
	// the 5 s a libc resolver waits before it asks again.
	ForwardTimeout time.Duration
	// MaxForwards bounds the forwarded queries in flight; more get
	// SERVFAIL at once. Default 256.
	MaxForwards int
	Logger      *slog.Logger
}

// Server is a node's DNS server. New binds its sockets, Run serves until
// its context ends or Close is called.
type Server struct {
	cfg   Config
	log   *slog.Logger
	udp   *net.UDPConn
	tcp   *net.TCPListener
	up    *upstreams
	slots chan struct{} // one per forwarded query in flight

	table atomic.Pointer[table]
	turn  atomic.Uint64 // round robin of tasks answers

	mu     sync.Mutex
	state  int // idle, running, closed
	cancel context.CancelFunc
	done   chan struct{}
}

const (
	idle = iota
	running
	closed
)

// ErrClosed is returned by Run on a server already closed or run.
var ErrClosed = errors.New("dns server closed")

// New binds cfg.Addr over UDP and TCP. The server answers every owned
// name with NXDOMAIN until SetRecords gives it a table.
func New(cfg Config) (*Server, error) {
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = "/etc/resolv.conf"
	}
	if cfg.ForwardTimeout <= 0 {
		cfg.ForwardTimeout = 2 * time.Second
	}
	if cfg.MaxForwards <= 0 {
		cfg.MaxForwards = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	udp, tcp, err := listen(cfg.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger.With("address", udp.LocalAddr().String()),
		udp:   udp,
		tcp:   tcp,
		up:    &upstreams{path: cfg.ResolvConf, port: cfg.UpstreamPort, self: udp.LocalAddr().String()},
		slots: make(chan struct{}, cfg.MaxForwards),
	}
	s.table.Store(&table{})
	return s, nil
}

// listen binds the UDP socket first and the TCP socket on its port. With
// port 0 the TCP port may be taken already; it tries a few ports then.
func listen(addr string) (*net.UDPConn, *net.TCPListener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dns listen address %q: %w", addr, err)
	}
	var lastErr error
	for range 10 {
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, nil, fmt.Errorf("dns listen udp %s: %w", addr, err)
		}
		udp := u.(*net.UDPConn)
		bound := udp.LocalAddr().(*net.UDPAddr)
		t, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(bound.Port)))
		if err == nil {
			return udp, t.(*net.TCPListener), nil
		}
		udp.Close()
		lastErr = err
		if port != "0" {
			break
		}
	}
	return nil, nil, fmt.Errorf("dns listen tcp %s: %w", addr, lastErr)
}

// Addr is the address the server listens on, UDP and TCP.
func (s *Server) Addr() string { return s.udp.LocalAddr().String() }

// SetRecords replaces the whole table at once: a query sees the old table
// or the new one, never a mix.
func (s *Server) SetRecords(r Records) error {
	t, err := compile(r)
	if err != nil {
		return fmt.Errorf("dns records: %w", err)
	}
	s.table.Store(t)
	return nil
}

// Run serves until ctx ends or Close is called, then stops every
// goroutine it started, in-flight forwards included, before it returns.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.state != idle {
		s.mu.Unlock()
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	s.state, s.cancel, s.done = running, cancel, make(chan struct{})
	s.mu.Unlock()
	defer close(s.done)
	defer cancel()

	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, req *mdns.Msg) { s.serve(ctx, w, req) })
	servers := []*mdns.Server{
		{PacketConn: s.udp, Handler: h, UDPSize: mdns.DefaultMsgSize},
		{Listener: s.tcp, Handler: h},
	}
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(servers))
	started := make(chan int, len(servers))
	for i, srv := range servers {
		srv.NotifyStartedFunc = func() { started <- i }
		go func() { results <- result{i, srv.ActivateAndServe()} }()
	}

	// A miekg server can only be shut down once it has started; wait for
	// each to start or to fail before anything shuts them down.
	up := make([]bool, len(servers))
	exited := make([]bool, len(servers))
	var runErr error
	waiting := func() bool {
		for i := range servers {
			if !up[i] && !exited[i] {
				return true
			}
		}
		return false
	}
	for waiting() {
		select {
		case i := <-started:
			up[i] = true
		case r := <-results:
			exited[r.i] = true
			runErr = fmt.Errorf("dns serve: %w", r.err)
		}
	}
	if runErr == nil {
		s.log.Info("dns serving")
		select {
		case <-ctx.Done():
		case r := <-results:
			exited[r.i] = true
			if r.err != nil {
				runErr = fmt.Errorf("dns serve: %w", r.err)
			}
		}
	}
	cancel() // ends forwards in flight, so shutdown does not wait on them
	for i, srv := range servers {
		if up[i] && !exited[i] {
			if err := srv.Shutdown(); err != nil && runErr == nil {
				runErr = fmt.Errorf("dns shutdown: %w", err)
			}
		}
	}
	for i := range servers {
		if !exited[i] {
			<-results
		}
	}
	s.udp.Close()
	s.tcp.Close()
	return runErr
}

// Close stops a running server and waits for Run to return, or releases
// the sockets of one never run.
func (s *Server) Close() error {
	s.mu.Lock()
	prev := s.state
	s.state = closed
	s.mu.Unlock()
	switch prev {
	case idle:
		return errors.Join(s.udp.Close(), s.tcp.Close())
	case running:
		s.cancel()
		<-s.done
	}
	return nil
}

func (s *Server) serve(ctx context.Context, w mdns.ResponseWriter, req *mdns.Msg) {
	reply := s.answer(ctx, w, req)
	// Fit the reply to what the replica can take; TC tells it to ask
	// again over TCP.
	size := mdns.MaxMsgSize
	if _, isUDP := w.RemoteAddr().(*net.UDPAddr); isUDP {
		size = mdns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
	}
	reply.Truncate(size)
	if err := w.WriteMsg(reply); err != nil {
		s.log.Debug("dns reply not sent", "to", w.RemoteAddr().String(), "err", err)
	}
}

func (s *Server) answer(ctx context.Context, w mdns.ResponseWriter, req *mdns.Msg) *mdns.Msg {
	reply := new(mdns.Msg)
	if req.Opcode != mdns.OpcodeQuery {
		return reply.SetRcode(req, mdns.RcodeNotImplemented)
	}
	q := req.Question[0] // the default accept function lets one question through
	switch {
	case q.Qclass != mdns.ClassINET,
		q.Qtype == mdns.TypeANY, q.Qtype == mdns.TypeAXFR, q.Qtype == mdns.TypeIXFR:
		return reply.SetRcode(req, mdns.RcodeRefused)
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name), ".")
	addrs, owned := s.table.Load().lookup(askerOf(w.RemoteAddr()), name)
	if !owned {
		return s.forward(ctx, req)
	}
	reply.SetReply(req)
	reply.Authoritative = true
	reply.RecursionAvailable = true
	if opt := req.IsEdns0(); opt != nil {
		reply.SetEdns0(mdns.DefaultMsgSize, false)
	}
	if len(addrs) == 0 {
		reply.Rcode = mdns.RcodeNameError
		return reply
	}
	// Round robin: each query starts one further along.
	start := int(s.turn.Add(1) % uint64(len(addrs)))
	for i := range addrs {
		a := addrs[(start+i)%len(addrs)]
		// TTL 0: answers follow the store, a dead replica must not
		// stay in a replica's cache (doc.go).
		hdr := mdns.RR_Header{Name: q.Name, Class: mdns.ClassINET, Ttl: 0}
		switch {
		case q.Qtype == mdns.TypeA && a.Is4():
			hdr.Rrtype = mdns.TypeA
			reply.Answer = append(reply.Answer, &mdns.A{Hdr: hdr, A: a.AsSlice()})
		case q.Qtype == mdns.TypeAAAA && a.Is6():
			hdr.Rrtype = mdns.TypeAAAA
			reply.Answer = append(reply.Answer, &mdns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
		}
	}
	return reply
}

func (s *Server) forward(ctx context.Context, req *mdns.Msg) *mdns.Msg {
	fail := new(mdns.Msg).SetRcode(req, mdns.RcodeServerFailure)
	fail.RecursionAvailable = true
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		s.log.Warn("dns forward refused: too many in flight", "max", s.cfg.MaxForwards)
		return fail
	}
	servers, err := s.up.list()
	if err != nil {
		s.log.Warn("dns cannot forward", "err", err)
		return fail
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ForwardTimeout)
	defer cancel()
	r, err := forward(ctx, servers, req)
	if err != nil {
		s.log.Debug("dns forward failed", "name", req.Question[0].Name, "err", err)
		return fail
	}
	return r
}

// askerOf is the source address of a query: the replica that asked.
func askerOf(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap()
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
