package integration

// The network benchmark (docs/bench/network.md): the overlay's data path
// and control path on a three-worker container cluster, each beside a
// reference measured in the same run.

import (
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/jaco-project/jaco/agent/netview"
)

// BenchmarkNetwork measures, on one cluster where web runs on w2 and w3
// and a client replica on w1, all on the network front:
//   - throughput: one TCP stream of 32 MiB from the client replica to the
//     web replica on w2 over the overlay, beside the same stream between
//     their hosts' underlay addresses (w1 → w2), alternated;
//   - rtt: 64-byte request/answer round trips on one connection, overlay
//     and underlay alternated;
//   - dns: A queries for web from the client replica to its node's DNS
//     server, beside a bare UDP echo at the same address;
//   - propagation: a web replica is SIGKILLed; the time until it is gone
//     from tasks.web (asked from the client replica on w1) and from w1's
//     VIP rotation, and the time from its replacement's RUNNING (the
//     store's timestamp) to its appearance in both.
//
// The samples are timed one by one; medians and p99 are reported with
// b.ReportMetric (ns/op is the time of one iteration, both paths).
func BenchmarkNetwork(b *testing.B) {
	h := startOnT("BenchmarkNetworkCluster")
	defer h.stop(b)
	var nb *netBench
	if !h.do(func(t *testing.T) { nb = setUpNetBench(t) }) {
		b.Fatal("setting up the cluster failed (output above)")
	}
	b.Run("throughput", nb.throughput)
	b.Run("rtt", nb.rtt)
	b.Run("dns", nb.dns)
	// Last: it kills the replica the data-path servers live in.
	b.Run("propagation", func(b *testing.B) { nb.propagation(b, h) })
}

// onT runs functions on the goroutine of a *testing.T. The cluster
// harness (newContainerCluster, eventually, killReplica) takes a
// *testing.T, which a benchmark has not; testing.RunTests makes one, whose
// cleanups (daemons, containerd, namespaces) run when stop ends it, after
// the sub-benchmarks.
type onT struct {
	work   chan func(*testing.T)
	exited chan struct{} // closed once RunTests returned
	ok     bool          // RunTests' answer, set before exited is closed
}

func startOnT(name string) *onT {
	h := &onT{work: make(chan func(*testing.T)), exited: make(chan struct{})}
	// Whatever -run says (here '^$'): this test is the benchmark's.
	all := func(string, string) (bool, error) { return true, nil }
	go func() {
		defer close(h.exited)
		h.ok = testing.RunTests(all, []testing.InternalTest{{Name: name, F: func(t *testing.T) {
			for f := range h.work {
				f(t)
			}
		}}})
	}()
	return h
}

// do runs f on the test's goroutine and says whether it passed. After a
// failure (t.Fatal ends the test) every later do returns false at once.
func (h *onT) do(f func(*testing.T)) bool {
	done := make(chan bool, 1)
	run := func(t *testing.T) {
		passed := false
		defer func() { done <- passed && !t.Failed() }()
		f(t)
		passed = true
	}
	select {
	case h.work <- run:
		return <-done
	case <-h.exited:
		return false
	}
}

// stop ends the test, which tears the cluster down.
func (h *onT) stop(b *testing.B) {
	// RunTests runs its tests -count times, and checks the count only
	// once they end: here, now. Once is what we mean.
	count := flag.Lookup("test.count")
	was := count.Value.String()
	_ = count.Value.Set("1")
	close(h.work)
	<-h.exited
	_ = count.Value.Set(was)
	if !h.ok {
		b.Error("the cluster's test failed (output above)")
	}
}

// netBench is the cluster and what the measurements need of it.
type netBench struct {
	c          *ccluster
	clientNS   string // the client replica's network namespace (w1)
	dnsAddr    string // its nameserver, host:port (its gateway on front)
	echoAddr   string // a UDP echo on that gateway address
	ovlAddr    string // the web replica on w2: its overlay address:port
	w1NS, w2NS string // the hosts' namespaces
	undAddr    string // w2's underlay address:port
	rulesTable string // w1's overlay rules (its VIP rotation)
	vip        string // web's virtual IP
}

const benchPort = 5201

func setUpNetBench(t *testing.T) *netBench {
	c := newContainerCluster(t, 3)
	wantOK(t, c.manager.jaco("network", "create", "front"))
	c.createService(t, "web", []string{"--replicas", "2", "--network", "front",
		"--constraint", "node.hostname!=w1", "--constraint", "node.hostname!=m1"}, idWebCmd)
	c.createService(t, "client", []string{"--network", "front", "--constraint", "node.hostname==w1"}, idleCmd)
	web := c.waitRunning(t, "web", 2, nil)
	client := c.waitRunning(t, "client", 1, nil)[0]
	i := slices.IndexFunc(web, func(r replica) bool { return r.Node == "w2" })
	if i < 0 {
		t.Fatalf("no web replica on w2: %v", web)
	}
	nb := &netBench{c: c, w1NS: "/var/run/netns/" + c.byName("w1").host.ns, w2NS: "/var/run/netns/" + c.byName("w2").host.ns}
	var err error
	if nb.clientNS, err = c.netnsOf("w1", client.ID); err != nil {
		t.Fatal(err)
	}
	conf, err := c.resolvConfOf("w1", client.ID)
	if err != nil {
		t.Fatal(err)
	}
	if nb.dnsAddr, err = nameserver(conf); err != nil {
		t.Fatal(err)
	}
	webNS, err := c.netnsOf("w2", web[i].ID)
	if err != nil {
		t.Fatal(err)
	}
	ovl, err := overlayAddrIn(webNS)
	if err != nil {
		t.Fatal(err)
	}
	nb.ovlAddr = net.JoinHostPort(ovl, fmt.Sprint(benchPort))
	nb.undAddr = net.JoinHostPort(c.byName("w2").host.ip, fmt.Sprint(benchPort))
	serveTCPIn(t, webNS, nb.ovlAddr)
	serveTCPIn(t, nb.w2NS, nb.undAddr)
	gw, _, _ := net.SplitHostPort(nb.dnsAddr)
	nb.echoAddr = net.JoinHostPort(gw, fmt.Sprint(benchPort))
	echoUDPIn(t, nb.w1NS, nb.echoAddr)
	nb.rulesTable = netview.TableName(c.nodeIDs["w1"])
	// Ready when web resolves from the client and both paths answer.
	eventually(t, 10*time.Second, func() error {
		addrs, _, err := lookupIn(nb.clientNS, nb.dnsAddr, "web")
		if err != nil || len(addrs) != 1 {
			return fmt.Errorf("web resolves to %v: %v", addrs, err)
		}
		nb.vip = addrs[0]
		for _, p := range [][2]string{{nb.clientNS, nb.ovlAddr}, {nb.w1NS, nb.undAddr}} {
			if _, err := transfer(p[0], p[1], 1<<10); err != nil {
				return err
			}
		}
		return nil
	})
	return nb
}

// overlayAddrIn is the address on the test overlay pool of the namespace
// at nsPath.
func overlayAddrIn(nsPath string) (string, error) {
	pool := netip.MustParsePrefix(testOverlayPool)
	var found string
	err := inNetns(nsPath, func() error {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && pool.Contains(p.Addr()) {
				found = p.Addr().String()
				return nil
			}
		}
		return fmt.Errorf("no address in %s among %v", pool, addrs)
	})
	return found, err
}

// serveTCPIn listens on addr inside the namespace at nsPath until t ends.
// A connection's first byte says what it wants: 's' (sink: read to EOF,
// answer one byte) or 'e' (echo 64-byte requests).
func serveTCPIn(t *testing.T, nsPath, addr string) {
	var ln net.Listener
	if err := inNetns(nsPath, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, nsPath, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[conn] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() { mu.Lock(); delete(conns, conn); mu.Unlock(); conn.Close() }()
				serveConn(conn)
			})
		}
	})
}

func serveConn(conn net.Conn) {
	buf := make([]byte, 128<<10)
	if _, err := io.ReadFull(conn, buf[:1]); err != nil {
		return
	}
	switch buf[0] {
	case 's':
		if _, err := io.CopyBuffer(io.Discard, conn, buf); err == nil {
			_, _ = conn.Write([]byte{'k'})
		}
	case 'e':
		for {
			if _, err := io.ReadFull(conn, buf[:64]); err != nil {
				return
			}
			if _, err := conn.Write(buf[:64]); err != nil {
				return
			}
		}
	}
}

// echoUDPIn answers every UDP datagram to addr, inside the namespace at
// nsPath, with itself, until t ends.
func echoUDPIn(t *testing.T, nsPath, addr string) {
	var pc net.PacketConn
	if err := inNetns(nsPath, func() (err error) { pc, err = net.ListenPacket("udp", addr); return err }); err != nil {
		t.Fatalf("listen on udp %s in %s: %v", addr, nsPath, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { pc.Close(); wg.Wait() })
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	})
}

// transfer sends size bytes to a sink at addr from the namespace at
// nsPath and returns the time from the first byte sent to the sink's
// answer that it read them all (the connection is made before).
func transfer(nsPath, addr string, size int) (time.Duration, error) {
	conn, err := dialIn(nsPath, addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 128<<10)
	start := time.Now()
	if _, err := conn.Write([]byte{'s'}); err != nil {
		return 0, fmt.Errorf("send to %s: %w", addr, err)
	}
	for sent := 0; sent < size; sent += len(buf) {
		if _, err := conn.Write(buf[:min(len(buf), size-sent)]); err != nil {
			return 0, fmt.Errorf("send to %s: %w", addr, err)
		}
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(conn, buf[:1]); err != nil {
		return 0, fmt.Errorf("answer of %s: %w", addr, err)
	}
	return time.Since(start), nil
}

const transferSize = 32 << 20

func (nb *netBench) throughput(b *testing.B) {
	var ovl, und []float64 // MB/s
	mbps := func(d time.Duration) float64 { return transferSize / d.Seconds() / 1e6 }
	b.SetBytes(2 * transferSize)
	for i := range b.N {
		// Alternate which path goes first, so neither always follows
		// the other's burst.
		for j := range 2 {
			if (i+j)%2 == 0 {
				d, err := transfer(nb.clientNS, nb.ovlAddr, transferSize)
				if err != nil {
					b.Fatal("overlay: ", err)
				}
				ovl = append(ovl, mbps(d))
			} else {
				d, err := transfer(nb.w1NS, nb.undAddr, transferSize)
				if err != nil {
					b.Fatal("underlay: ", err)
				}
				und = append(und, mbps(d))
			}
		}
	}
	b.ReportMetric(quantile(ovl, 0.5), "ovl-MB/s")
	b.ReportMetric(quantile(ovl, 0.01), "ovl-p1-MB/s")
	b.ReportMetric(quantile(und, 0.5), "und-MB/s")
	b.ReportMetric(quantile(und, 0.01), "und-p1-MB/s")
	b.ReportMetric(quantile(ovl, 0.5)/quantile(und, 0.5), "ovl/und")
}

func (nb *netBench) rtt(b *testing.B) {
	paths := []struct{ ns, addr string }{{nb.clientNS, nb.ovlAddr}, {nb.w1NS, nb.undAddr}}
	conns := make([]net.Conn, len(paths))
	for i, p := range paths {
		conn, err := dialIn(p.ns, p.addr, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte{'e'}); err != nil {
			b.Fatal(err)
		}
		conns[i] = conn
	}
	samples := [2][]float64{} // µs, overlay then underlay
	buf := make([]byte, 64)
	b.ResetTimer()
	for i := range b.N {
		for j := range 2 {
			k := (i + j) % 2
			conn := conns[k]
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			start := time.Now()
			if _, err := conn.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(conn, buf); err != nil {
				b.Fatal(err)
			}
			samples[k] = append(samples[k], float64(time.Since(start).Nanoseconds())/1e3)
		}
	}
	reportLatency(b, "ovl", samples[0], "und", samples[1])
}

func (nb *netBench) dns(b *testing.B) {
	var dnsConn, echoConn net.Conn
	err := inNetns(nb.clientNS, func() (err error) {
		if dnsConn, err = net.Dial("udp", nb.dnsAddr); err != nil {
			return err
		}
		echoConn, err = net.Dial("udp", nb.echoAddr)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	defer dnsConn.Close()
	defer echoConn.Close()
	c := &mdns.Client{Timeout: 2 * time.Second}
	q := new(mdns.Msg).SetQuestion("web.", mdns.TypeA)
	packed, err := q.Pack()
	if err != nil {
		b.Fatal(err)
	}
	samples := [2][]float64{}
	buf := make([]byte, 2048)
	ask := [2]func() error{
		func() error {
			r, _, err := c.ExchangeWithConn(q, &mdns.Conn{Conn: dnsConn})
			if err == nil && len(r.Answer) != 1 {
				err = fmt.Errorf("web: %d answers", len(r.Answer))
			}
			return err
		},
		func() error {
			_ = echoConn.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := echoConn.Write(packed); err != nil {
				return err
			}
			_, err := echoConn.Read(buf)
			return err
		},
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range 2 {
			k := (i + j) % 2
			start := time.Now()
			if err := ask[k](); err != nil {
				b.Fatal(err)
			}
			samples[k] = append(samples[k], float64(time.Since(start).Nanoseconds())/1e3)
		}
	}
	reportLatency(b, "dns", samples[0], "echo", samples[1])
}

// reportLatency reports p50 and p99 of two sets of latencies (µs) and
// what the first adds to the second.
func reportLatency(b *testing.B, name string, xs []float64, ref string, refs []float64) {
	b.StopTimer()
	b.ReportMetric(quantile(xs, 0.5), name+"-p50-µs")
	b.ReportMetric(quantile(xs, 0.99), name+"-p99-µs")
	b.ReportMetric(quantile(refs, 0.5), ref+"-p50-µs")
	b.ReportMetric(quantile(refs, 0.99), ref+"-p99-µs")
	b.ReportMetric(quantile(xs, 0.5)-quantile(refs, 0.5), "extra-p50-µs")
	b.ReportMetric(quantile(xs, 0.99)-quantile(refs, 0.99), "extra-p99-µs")
	b.ReportMetric(quantile(xs, 0.5)/quantile(refs, 0.5), name+"/"+ref)
}

// quantile is the q-quantile of xs (nearest rank); NaN for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
