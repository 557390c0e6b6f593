package dns

import (
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// BenchmarkQuery measures one A query for a service name over UDP, from
// a replica's address on loopback, answered from the table. The reference
// is a bare miekg server answering one static record in the same process
// over the same path, measured in the same run: x-ref is what the table,
// the asker's view and the round robin cost on top of the library.
func BenchmarkQuery(b *testing.B) {
	s := startServer(b, Config{})
	ref := staticServer(b)
	// testing.Benchmark cannot run inside a benchmark: the reference is
	// timed by hand, as long as one sub-benchmark's default run.
	refNs := timeQueries(b, ref, "web.", time.Second)
	for _, name := range []string{"web.", "tasks.web."} {
		b.Run(name, func(b *testing.B) {
			benchQueries(b, s.Addr(), name)
			own := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.StopTimer()
			b.ReportMetric(own/refNs, "x-ref")
		})
	}
	b.Run("reference", func(b *testing.B) { benchQueries(b, ref, "web.") })
}

func benchQueries(b *testing.B, server, name string) {
	c := &mdns.Client{Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(onFront)}}}
	conn, err := c.Dial(server)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	m := new(mdns.Msg).SetQuestion(name, mdns.TypeA)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, _, err := c.ExchangeWithConn(m, conn)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Answer) == 0 {
			b.Fatalf("%s: no answer", name)
		}
	}
}

// staticServer is the reference: a miekg server whose handler writes one
// fixed A record, nothing looked up.
func staticServer(b testing.TB) string {
	port := fakeUpstream(b, func(w mdns.ResponseWriter, req *mdns.Msg) {
		m := new(mdns.Msg).SetReply(req)
		m.Answer = []mdns.RR{&mdns.A{
			Hdr: mdns.RR_Header{Name: req.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET},
			A:   net.IPv4(198, 18, 0, 10)}}
		w.WriteMsg(m)
	})
	return net.JoinHostPort("127.0.0.1", port)
}

// timeQueries asks name for about d and returns the mean ns per query.
func timeQueries(b *testing.B, server, name string, d time.Duration) float64 {
	c := &mdns.Client{Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(onFront)}}}
	conn, err := c.Dial(server)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	m := new(mdns.Msg).SetQuestion(name, mdns.TypeA)
	n, start := 0, time.Now()
	for time.Since(start) < d {
		if _, _, err := c.ExchangeWithConn(m, conn); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkLookup is the table's share of a query: the asker's networks
// and the name's entry, without the network round trip.
func BenchmarkLookup(b *testing.B) {
	tb, err := compile(testRecords())
	if err != nil {
		b.Fatal(err)
	}
	asker := addr(onBoth)
	b.ReportAllocs()
	for b.Loop() {
		if got, _ := tb.lookup(asker, "tasks.web.front"); len(got) != 3 {
			b.Fatal(got)
		}
	}
}
