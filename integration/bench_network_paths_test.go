package integration

// BenchmarkNetwork's data path: throughput, round trips and DNS, each
// beside its reference in the same run.

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// serveTCPIn listens on addr inside the namespace at nsPath until t ends.
// A connection's first byte says what it wants: 's' (sink: read to EOF,
// answer one byte) or 'e' (echo 64-byte requests).
func serveTCPIn(t testing.TB, nsPath, addr string) {
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
func echoUDPIn(t testing.TB, nsPath, addr string) {
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
	var mbs [2][]float64 // MB/s, overlay then underlay
	var cpu [2]cpuUse    // summed over each path's transfers
	paths := [2]struct{ ns, addr string }{{nb.clientNS, nb.ovlAddr}, {nb.w1NS, nb.undAddr}}
	for i := range b.N {
		// Alternate which path goes first, so neither always follows
		// the other's burst.
		for j := range 2 {
			k := (i + j) % 2
			before, err := nb.cpuNow()
			if err != nil {
				b.Fatal(err)
			}
			d, err := transfer(paths[k].ns, paths[k].addr, transferSize)
			if err != nil {
				b.Fatal(err)
			}
			after, err := nb.cpuNow()
			if err != nil {
				b.Fatal(err)
			}
			cpu[k] = cpu[k].plus(after.minus(before))
			mbs[k] = append(mbs[k], transferSize/d.Seconds()/1e6)
		}
	}
	b.ReportMetric(quantile(mbs[0], 0.5), "ovl-MB/s")
	b.ReportMetric(quantile(mbs[0], 0.01), "ovl-p1-MB/s")
	b.ReportMetric(quantile(mbs[1], 0.5), "und-MB/s")
	b.ReportMetric(quantile(mbs[1], 0.01), "und-p1-MB/s")
	b.ReportMetric(quantile(mbs[0], 0.5)/quantile(mbs[1], 0.5), "ovl/und")
	// CPU per MB moved: the machine's (softirqs included), and of it the
	// two jacods (wireguard-go) and this process (both TCP ends).
	mb := float64(b.N) * transferSize / 1e6
	b.ReportMetric(cpu[0].machine/mb*1e6, "ovl-cpu-µs/MB")
	b.ReportMetric(cpu[0].w1/mb*1e6, "ovl-w1-µs/MB")
	b.ReportMetric(cpu[0].w2/mb*1e6, "ovl-w2-µs/MB")
	b.ReportMetric(cpu[0].bench/mb*1e6, "ovl-bench-µs/MB")
	b.ReportMetric(cpu[1].machine/mb*1e6, "und-cpu-µs/MB")
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
