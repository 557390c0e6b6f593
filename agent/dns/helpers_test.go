package dns

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// Askers in the tests are loopback sources: every 127.0.0.0/8 address
// routes on lo, so a client bound to 127.0.1.5 asks as a replica on
// "front" and one bound to 127.0.2.5 as a replica on "back".
var (
	onFront = "127.0.1.5"
	onBack  = "127.0.2.5"
	onBoth  = "127.0.1.6" // on front by subnet, on back by Askers
	onNone  = "127.0.9.9"
)

var quiet = slog.New(slog.DiscardHandler)

func testRecords() Records {
	return Records{
		Networks: []Network{
			{Name: "front", Subnet: netip.MustParsePrefix("127.0.1.0/24"), Services: []Service{
				{Name: "web", VIP: addr("198.18.0.10"), Tasks: addrs("198.18.1.1", "198.18.1.2", "198.18.1.3")},
				{Name: "rr", Tasks: addrs("198.18.1.7", "198.18.1.8")},
			}},
			{Name: "back", Subnet: netip.MustParsePrefix("127.0.2.0/24"), Services: []Service{
				{Name: "db", VIP: addr("198.18.4.10"), Tasks: addrs("198.18.5.1")},
				{Name: "web", VIP: addr("198.18.4.11"), Tasks: addrs("198.18.5.2")},
			}},
		},
		Askers: map[netip.Addr][]string{addr(onBoth): {"front", "back"}},
	}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = addr(s)
	}
	return out
}

// startServer runs a server on an ephemeral loopback port until the test
// ends, and checks that Run returns cleanly.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = writeResolvConf(t, "127.0.0.1")
		cfg.UpstreamPort = "1" // nothing listens there
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRecords(testRecords()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		select {
		case err := <-errc:
			// ErrClosed: the test ended before Run began.
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after Close")
		}
	})
	return s
}

func writeResolvConf(t testing.TB, servers ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "resolv.conf")
	var b []byte
	for _, s := range servers {
		b = append(b, "nameserver "+s+"\n"...)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ask sends one question from source address src over network ("udp" or
// "tcp").
func ask(t testing.TB, server, src, network, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), qtype) // the wire has only full names
	return exchangeFrom(t, server, src, network, m)
}

func exchangeFrom(t testing.TB, server, src, network string, m *mdns.Msg) *mdns.Msg {
	t.Helper()
	var local net.Addr = &net.UDPAddr{IP: net.ParseIP(src)}
	if network == "tcp" {
		local = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c := &mdns.Client{Net: network, Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}}
	// The sockets are bound before Run: a query sent early waits in them.
	r, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("ask %s from %s over %s: %v", m.Question[0].Name, src, network, err)
	}
	return r
}

// answers returns the addresses of the A and AAAA records of r, in
// order.
func answers(t testing.TB, r *mdns.Msg) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *mdns.A:
			a, _ := netip.AddrFromSlice(rr.A)
			out = append(out, a.Unmap())
		case *mdns.AAAA:
			a, _ := netip.AddrFromSlice(rr.AAAA)
			out = append(out, a)
		}
	}
	return out
}

// fakeUpstream serves handler on a loopback UDP and TCP port until the
// test ends; it returns the port.
func fakeUpstream(t testing.TB, handler mdns.HandlerFunc) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		pc.Close()
		t.Skipf("tcp port %d taken: %v", port, err)
	}
	for _, srv := range []*mdns.Server{{PacketConn: pc, Handler: handler}, {Listener: l, Handler: handler}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		done := make(chan error, 1)
		go func() { done <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-done:
			t.Fatalf("fake upstream: %v", err)
		}
		t.Cleanup(func() {
			if err := srv.Shutdown(); err != nil {
				t.Error(err)
			}
			<-done
		})
	}
	return strconv.Itoa(port)
}

func sorted(as []netip.Addr) []netip.Addr {
	return slices.SortedFunc(slices.Values(as), netip.Addr.Compare)
}
