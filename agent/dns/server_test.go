package dns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	"go.uber.org/goleak"

	"github.com/jaco-project/jaco/internal/waitfor"
)

func TestOwnNames(t *testing.T) {
	s := startServer(t, Config{})
	for _, tc := range []struct {
		from, name string
		want       []netip.Addr // nil: NXDOMAIN
	}{
		{onFront, "web.", addrs("198.18.0.10")},
		{onFront, "WeB", addrs("198.18.0.10")},
		{onFront, "web.front.", addrs("198.18.0.10")},
		{onBack, "web.", addrs("198.18.4.11")},      // the same name on the asker's network
		{onBack, "web.back.", addrs("198.18.4.11")}, // NAME.NETWORK
		{onFront, "web.back.", nil},                 // front's replica is not on back
		{onFront, "db.", nil},                       // a service on another network
		{onFront, "db.back.", nil},
		{onBack, "db.", addrs("198.18.4.10")},
		{onBoth, "db.", addrs("198.18.4.10")},       // on back through Askers
		{onBoth, "web.", addrs("198.18.0.10")},      // front first: it asked through front
		{onBoth, "web.back.", addrs("198.18.4.11")}, // named network
		{onNone, "web.", nil},
		{onFront, "tasks.db.", nil},
		{onBack, "tasks.db.back.", addrs("198.18.5.1")},
	} {
		r := ask(t, s.Addr(), tc.from, "udp", tc.name, mdns.TypeA)
		if tc.want == nil {
			if r.Rcode != mdns.RcodeNameError || len(r.Answer) != 0 {
				t.Errorf("%s from %s: want NXDOMAIN, got %s %v", tc.name, tc.from, mdns.RcodeToString[r.Rcode], r.Answer)
			}
			continue
		}
		if r.Rcode != mdns.RcodeSuccess || !r.Authoritative {
			t.Errorf("%s from %s: rcode %s, authoritative %v", tc.name, tc.from, mdns.RcodeToString[r.Rcode], r.Authoritative)
		}
		if got := answers(t, r); !slices.Equal(got, tc.want) {
			t.Errorf("%s from %s: got %v, want %v", tc.name, tc.from, got, tc.want)
		}
		for _, rr := range r.Answer {
			if rr.Header().Ttl != 0 {
				t.Errorf("%s: TTL %d, want 0", tc.name, rr.Header().Ttl)
			}
			if rr.Header().Name != mdns.Fqdn(tc.name) {
				t.Errorf("%s: answer for %q", tc.name, rr.Header().Name)
			}
		}
	}
}

func TestAAAAOfOwnName(t *testing.T) {
	s := startServer(t, Config{})
	r := ask(t, s.Addr(), onFront, "udp", "web.", mdns.TypeAAAA)
	if r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("AAAA web: %s %v, want an empty NOERROR", mdns.RcodeToString[r.Rcode], r.Answer)
	}
	r = ask(t, s.Addr(), onFront, "udp", "db.", mdns.TypeAAAA)
	if r.Rcode != mdns.RcodeNameError {
		t.Fatalf("AAAA db from front: %s, want NXDOMAIN", mdns.RcodeToString[r.Rcode])
	}
}

// tasks.NAME lists exactly the replicas, each answer one further along.
func TestTasksRoundRobin(t *testing.T) {
	s := startServer(t, Config{})
	want := addrs("198.18.1.1", "198.18.1.2", "198.18.1.3")
	var prev []netip.Addr
	firsts := map[netip.Addr]bool{}
	for i := range 6 {
		r := ask(t, s.Addr(), onFront, "udp", "tasks.web.front", mdns.TypeA)
		for _, rr := range r.Answer {
			if rr.Header().Ttl != 0 {
				t.Fatalf("tasks answer with TTL %d, want 0", rr.Header().Ttl)
			}
		}
		got := answers(t, r)
		if !slices.Equal(sorted(got), want) {
			t.Fatalf("query %d: got %v, want %v in some order", i, got, want)
		}
		if prev != nil {
			rotated := append(slices.Clone(prev[1:]), prev[0])
			if !slices.Equal(got, rotated) {
				t.Fatalf("query %d: got %v after %v, want %v", i, got, prev, rotated)
			}
		}
		prev = got
		firsts[got[0]] = true
	}
	if len(firsts) != len(want) {
		t.Fatalf("first answers %v: not every replica came first", firsts)
	}
	// dnsrr: NAME answers with the replicas.
	got := answers(t, ask(t, s.Addr(), onFront, "udp", "rr", mdns.TypeA))
	if !slices.Equal(sorted(got), addrs("198.18.1.7", "198.18.1.8")) {
		t.Fatalf("rr: got %v", got)
	}
}

func TestUpdateSeenOnNextQuery(t *testing.T) {
	s := startServer(t, Config{})
	if got := answers(t, ask(t, s.Addr(), onFront, "udp", "tasks.web", mdns.TypeA)); len(got) != 3 {
		t.Fatalf("before: %v", got)
	}
	r := testRecords()
	r.Networks[0].Services[0].Tasks = addrs("198.18.1.2")
	r.Networks[0].Services[0].VIP = addr("198.18.0.99")
	if err := s.SetRecords(r); err != nil {
		t.Fatal(err)
	}
	if got := answers(t, ask(t, s.Addr(), onFront, "udp", "tasks.web", mdns.TypeA)); !slices.Equal(got, addrs("198.18.1.2")) {
		t.Fatalf("tasks after: %v", got)
	}
	if got := answers(t, ask(t, s.Addr(), onFront, "udp", "web", mdns.TypeA)); !slices.Equal(got, addrs("198.18.0.99")) {
		t.Fatalf("vip after: %v", got)
	}
	// The last replica gone: the name has nothing left.
	r.Networks[0].Services[0].Tasks = nil
	if err := s.SetRecords(r); err != nil {
		t.Fatal(err)
	}
	if rc := ask(t, s.Addr(), onFront, "udp", "tasks.web", mdns.TypeA).Rcode; rc != mdns.RcodeNameError {
		t.Fatalf("no replicas: %s, want NXDOMAIN", mdns.RcodeToString[rc])
	}
	if err := s.SetRecords(Records{Networks: []Network{{Name: "x"}}}); err == nil {
		t.Fatal("a network without subnet was taken")
	}
}

func TestRefused(t *testing.T) {
	s := startServer(t, Config{})
	for _, tc := range []struct {
		network string
		qtype   uint16
		class   uint16
	}{
		{"udp", mdns.TypeANY, mdns.ClassINET},
		{"tcp", mdns.TypeAXFR, mdns.ClassINET},
		{"tcp", mdns.TypeIXFR, mdns.ClassINET},
		{"udp", mdns.TypeA, mdns.ClassCHAOS},
		{"udp", mdns.TypeTXT, mdns.ClassCHAOS},
	} {
		m := new(mdns.Msg)
		m.SetQuestion("web.", tc.qtype)
		m.Question[0].Qclass = tc.class
		r := exchangeFrom(t, s.Addr(), onFront, tc.network, m)
		if r.Rcode != mdns.RcodeRefused || len(r.Answer) != 0 {
			t.Errorf("%s %s over %s: %s, want REFUSED", mdns.ClassToString[tc.class], mdns.TypeToString[tc.qtype], tc.network, mdns.RcodeToString[r.Rcode])
		}
	}
}

func TestTruncatedThenTCP(t *testing.T) {
	s := startServer(t, Config{})
	var many []netip.Addr
	for i := range 200 {
		many = append(many, netip.AddrFrom4([4]byte{198, 18, 2 + byte(i/250), byte(1 + i%250)}))
	}
	r := testRecords()
	r.Networks[0].Services = append(r.Networks[0].Services, Service{Name: "big", VIP: addr("198.18.0.20"), Tasks: many})
	if err := s.SetRecords(r); err != nil {
		t.Fatal(err)
	}
	udp := ask(t, s.Addr(), onFront, "udp", "tasks.big", mdns.TypeA)
	if !udp.Truncated || len(udp.Answer) == 0 || len(udp.Answer) >= len(many) {
		t.Fatalf("udp: truncated %v with %d answers, want TC and fewer than %d", udp.Truncated, len(udp.Answer), len(many))
	}
	udp.Compress = true // as it was sent
	if n := udp.Len(); n > mdns.MinMsgSize {
		t.Fatalf("udp reply of %d bytes", n)
	}
	// With EDNS0 the replica takes more, still not all.
	m := new(mdns.Msg)
	m.SetQuestion("tasks.big.", mdns.TypeA)
	m.SetEdns0(1232, false)
	edns := exchangeFrom(t, s.Addr(), onFront, "udp", m)
	if !edns.Truncated || len(edns.Answer) <= len(udp.Answer) {
		t.Fatalf("edns: truncated %v with %d answers", edns.Truncated, len(edns.Answer))
	}
	tcp := ask(t, s.Addr(), onFront, "tcp", "tasks.big", mdns.TypeA)
	got := answers(t, tcp)
	if tcp.Truncated || !slices.Equal(sorted(got), many) {
		t.Fatalf("tcp: truncated %v, %d answers, want all %d", tcp.Truncated, len(got), len(many))
	}
}

func TestForward(t *testing.T) {
	port := fakeUpstream(t, func(w mdns.ResponseWriter, req *mdns.Msg) {
		m := new(mdns.Msg).SetReply(req)
		switch req.Question[0].Name {
		case "example.org.":
			m.Answer = append(m.Answer, &mdns.A{
				Hdr: mdns.RR_Header{Name: "example.org.", Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 300},
				A:   net.IPv4(192, 0, 2, 1)})
		case "big.example.org.":
			// Larger than 512 bytes: the UDP answer is truncated and
			// the server asks again over TCP.
			for i := range 60 {
				m.Answer = append(m.Answer, &mdns.A{
					Hdr: mdns.RR_Header{Name: "big.example.org.", Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 300},
					A:   net.IPv4(192, 0, 2, byte(i))})
			}
			if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
				m.Truncate(mdns.MinMsgSize)
			}
		default:
			m.Rcode = mdns.RcodeNameError
		}
		if err := w.WriteMsg(m); err != nil {
			t.Error(err)
		}
	})
	s := startServer(t, Config{ResolvConf: writeResolvConf(t, "127.0.0.1"), UpstreamPort: port})
	r := ask(t, s.Addr(), onFront, "udp", "example.org.", mdns.TypeA)
	if got := answers(t, r); r.Rcode != mdns.RcodeSuccess || !slices.Equal(got, addrs("192.0.2.1")) || r.Answer[0].Header().Ttl != 300 {
		t.Fatalf("example.org: %s %v", mdns.RcodeToString[r.Rcode], r.Answer)
	}
	if r := ask(t, s.Addr(), onFront, "udp", "nowhere.example.org.", mdns.TypeA); r.Rcode != mdns.RcodeNameError {
		t.Fatalf("upstream's NXDOMAIN came back as %s", mdns.RcodeToString[r.Rcode])
	}
	// Not owned: web is known, but "example" is no network.
	if r := ask(t, s.Addr(), onFront, "udp", "web.example.", mdns.TypeA); r.Rcode != mdns.RcodeNameError || r.Authoritative {
		t.Fatalf("web.example: %s authoritative %v, want the upstream's NXDOMAIN", mdns.RcodeToString[r.Rcode], r.Authoritative)
	}
	// The server went to TCP for the whole answer; the replica over UDP
	// gets what fits, and all of it over TCP.
	udp := ask(t, s.Addr(), onFront, "udp", "big.example.org.", mdns.TypeA)
	tcp := ask(t, s.Addr(), onFront, "tcp", "big.example.org.", mdns.TypeA)
	if !udp.Truncated || len(tcp.Answer) != 60 || tcp.Truncated {
		t.Fatalf("big: udp truncated %v (%d), tcp %d answers truncated %v", udp.Truncated, len(udp.Answer), len(tcp.Answer), tcp.Truncated)
	}
}

func TestUpstreamDown(t *testing.T) {
	// A silent upstream: its socket takes queries and never answers.
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, port, _ := net.SplitHostPort(silent.LocalAddr().String())
	const timeout = 300 * time.Millisecond
	s := startServer(t, Config{ResolvConf: writeResolvConf(t, "127.0.0.1"), UpstreamPort: port, ForwardTimeout: timeout})
	start := time.Now()
	r := ask(t, s.Addr(), onFront, "udp", "example.org.", mdns.TypeA)
	took := time.Since(start)
	if r.Rcode != mdns.RcodeServerFailure {
		t.Fatalf("silent upstream: %s, want SERVFAIL", mdns.RcodeToString[r.Rcode])
	}
	if took < timeout || took > timeout+time.Second {
		t.Fatalf("SERVFAIL after %v, want just after %v", took, timeout)
	}

	// Nothing listens: SERVFAIL at once. startServer's default
	// upstream is port 1 on loopback.
	s = startServer(t, Config{ForwardTimeout: 10 * time.Second})
	start = time.Now()
	if r := ask(t, s.Addr(), onFront, "udp", "example.org.", mdns.TypeA); r.Rcode != mdns.RcodeServerFailure {
		t.Fatalf("no upstream: %s, want SERVFAIL", mdns.RcodeToString[r.Rcode])
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("refused upstream: SERVFAIL after %v", took)
	}
}

// Close ends Run, every goroutine it started and forwards in flight.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, port, _ := net.SplitHostPort(silent.LocalAddr().String())
	before := goleak.IgnoreCurrent()

	s, err := New(Config{Addr: "127.0.0.1:0", Logger: quiet, ResolvConf: writeResolvConf(t, "127.0.0.1"), UpstreamPort: port, ForwardTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	// A forward in flight, blocked on the silent upstream, and an idle
	// TCP connection.
	answered := make(chan *mdns.Msg, 1)
	go func() {
		m := new(mdns.Msg).SetQuestion("example.org.", mdns.TypeA)
		r, _, _ := (&mdns.Client{Timeout: 10 * time.Second}).Exchange(m, s.Addr())
		answered <- r
	}()
	buf := make([]byte, 512)
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := silent.ReadFrom(buf); err != nil {
		t.Fatalf("the forward never reached the upstream: %v", err)
	}
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	closed := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(closed); took > 3*time.Second {
		t.Fatalf("Close took %v", took)
	}
	if r := <-answered; r != nil && r.Rcode != mdns.RcodeServerFailure {
		t.Fatalf("the forward in flight got %s", mdns.RcodeToString[r.Rcode])
	}
	if err := s.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	// goleak.Find gives goroutines under half a second to end; they get
	// the 5 s a loaded machine may need.
	waitfor.Eventually(t, 5*time.Second, func() error { return goleak.Find(before) })
}

func TestCloseUnrun(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The port is free again, over both protocols.
	again, err := New(Config{Addr: s.Addr(), Logger: quiet})
	if err != nil {
		t.Fatalf("port not released: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- again.Run(ctx) }()
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run ended by its context: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
