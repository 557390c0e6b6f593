package integration

// BenchmarkNetwork/propagation: how long a replica's death and its
// replacement take to reach another node's DNS and VIP rotation.

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	mdns "github.com/miekg/dns"
)

// minKills is the fewest replicas propagation kills: one kill takes
// about as long as the default -benchtime, so b.N alone would be 1.
const minKills = 20

// propSample is one kill and its replacement, seen from w1.
type propSample struct {
	goneDNS, goneVIP time.Duration // kill → the victim is out of tasks.web, out of the VIP map
	running          time.Duration // kill → the replacement's RUNNING, as the store says
	upDNS, upVIP     time.Duration // that RUNNING → the replacement is in tasks.web, in the VIP map
}

func (nb *netBench) propagation(b *testing.B) {
	var goneDNS, goneVIP, running, upDNS, upVIP []float64 // ms
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	for i := range max(b.N, minKills) {
		s, err := nb.killAndReplace(i)
		if err != nil {
			b.Fatalf("kill %d: %v", i, err)
		}
		goneDNS, goneVIP = append(goneDNS, ms(s.goneDNS)), append(goneVIP, ms(s.goneVIP))
		running = append(running, ms(s.running))
		upDNS, upVIP = append(upDNS, ms(s.upDNS)), append(upVIP, ms(s.upVIP))
	}
	for _, m := range []struct {
		name string
		xs   []float64
	}{{"gone-dns", goneDNS}, {"gone-vip", goneVIP}, {"up-dns", upDNS}, {"up-vip", upVIP}, {"restart", running}} {
		b.ReportMetric(quantile(m.xs, 0.5), m.name+"-p50-ms")
		b.ReportMetric(quantile(m.xs, 0.99), m.name+"-p99-ms")
	}
}

// killAndReplace waits for web to be steady (two replicas running, both
// in w1's tasks.web and VIP map), SIGKILLs one (on w2 or w3 in turn),
// watches w1's DNS and VIP map until the victim has left both and a
// replacement has come, and times each step.
func (nb *netBench) killAndReplace(i int) (propSample, error) {
	var s propSample
	dnsPoll, closeDNS, err := nb.tasksPoller()
	if err != nil {
		return s, err
	}
	defer closeDNS()
	vipPoll, closeVIP, err := nb.vipPoller()
	if err != nil {
		return s, err
	}
	defer closeVIP()
	before, err := nb.steadyWeb(dnsPoll, vipPoll)
	if err != nil {
		return s, err
	}
	victim := before[i%len(before)]
	victimNS, err := nb.c.netnsOf(victim.Node, victim.ID)
	if err != nil {
		return s, err
	}
	victimAddr, err := overlayAddrIn(victimNS)
	if err != nil {
		return s, err
	}

	// Each watcher polls until the victim has gone and web has two
	// addresses again; the kill waits for both first looks.
	var started, done sync.WaitGroup
	var tls [2]timeline
	var errs [2]error
	quit := make(chan struct{})
	for k, poll := range []func() ([]string, error){dnsPoll, vipPoll} {
		started.Add(1)
		done.Go(func() {
			tls[k], errs[k] = watch(poll, victimAddr, started.Done, quit)
		})
	}
	started.Wait()
	killed := time.Now()
	if err := nb.c.kill(victim.Node, victim.ID); err != nil {
		close(quit)
		done.Wait()
		return s, err
	}
	done.Wait()
	for k, what := range []string{"tasks.web", "the VIP map"} {
		if errs[k] != nil {
			return s, fmt.Errorf("%s after killing %s (%s): %w", what, victim.ID, victimAddr, errs[k])
		}
	}

	// The replacement: the running replica that was not there before.
	var repl replica
	err = until(10*time.Second, func() error {
		reps, err := nb.c.ps("web", false)
		if err != nil {
			return err
		}
		for _, r := range reps {
			if r.State == "running" && !slices.ContainsFunc(before, func(o replica) bool { return o.ID == r.ID }) {
				repl = r
				return nil
			}
		}
		return fmt.Errorf("no new running replica of web: %v", reps)
	})
	if err != nil {
		return s, err
	}
	replNS, err := nb.c.netnsOf(repl.Node, repl.ID)
	if err != nil {
		return s, err
	}
	replAddr, err := overlayAddrIn(replNS)
	if err != nil {
		return s, err
	}
	s.running = repl.Since.Sub(killed)
	var dts [2][2]time.Duration // per watcher: gone, up
	for k, tl := range tls {
		gone := tl.first(0, func(a []string) bool { return !slices.Contains(a, victimAddr) })
		up := tl.first(gone, func(a []string) bool { return slices.Contains(a, replAddr) })
		if up < 0 {
			return s, fmt.Errorf("watcher %d never saw the replacement %s (%s): %v", k, repl.ID, replAddr, tl)
		}
		dts[k] = [2]time.Duration{tl[gone].at.Sub(killed), tl[up].at.Sub(repl.Since)}
	}
	s.goneDNS, s.upDNS = dts[0][0], dts[0][1]
	s.goneVIP, s.upVIP = dts[1][0], dts[1][1]
	return s, nil
}

// steadyWeb waits until web has two replicas running whose addresses are
// what both polls see, and returns them.
func (nb *netBench) steadyWeb(polls ...func() ([]string, error)) ([]replica, error) {
	var reps []replica
	err := until(replicaTimeout, func() (err error) {
		if reps, err = nb.c.ps("web", false); err != nil {
			return err
		}
		var addrs []string
		for _, r := range reps {
			if r.State != "running" {
				return fmt.Errorf("web: %v", reps)
			}
			ns, err := nb.c.netnsOf(r.Node, r.ID)
			if err != nil {
				return err
			}
			a, err := overlayAddrIn(ns)
			if err != nil {
				return err
			}
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		if len(addrs) != 2 {
			return fmt.Errorf("web: %v", reps)
		}
		for _, poll := range polls {
			seen, err := poll()
			if err != nil {
				return err
			}
			if !slices.Equal(seen, addrs) {
				return fmt.Errorf("w1 sees web at %v, it runs at %v", seen, addrs)
			}
		}
		return nil
	})
	return reps, err
}

// timeline is what a watcher saw: each change, when it was seen.
type timeline []struct {
	at    time.Time
	addrs []string
}

// first is the index of the first entry from index from on whose
// addresses pass ok, or -1.
func (tl timeline) first(from int, ok func([]string) bool) int {
	for i := max(from, 0); i < len(tl); i++ {
		if ok(tl[i].addrs) {
			return i
		}
	}
	return -1
}

// watch polls every 2 ms until the victim has left and two addresses
// are seen again (or 30 s, or quit), calling started after the first
// look, which must show the victim. A failed poll is skipped: the table
// can be reloaded under a dump.
func watch(poll func() ([]string, error), victim string, started func(), quit <-chan struct{}) (timeline, error) {
	var tl timeline
	var lastErr error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-quit:
			if len(tl) == 0 {
				started()
			}
			return tl, fmt.Errorf("stopped: saw %v", tl)
		default:
		}
		addrs, err := poll()
		at := time.Now()
		if err != nil {
			lastErr = err
		} else if len(tl) == 0 || !slices.Equal(tl[len(tl)-1].addrs, addrs) {
			tl = append(tl, struct {
				at    time.Time
				addrs []string
			}{at, addrs})
			if len(tl) == 1 {
				started()
				if !slices.Contains(addrs, victim) {
					return tl, fmt.Errorf("the first look %v lacks the victim %s", addrs, victim)
				}
			}
			if tl.first(0, func(a []string) bool { return !slices.Contains(a, victim) }) >= 0 && len(addrs) == 2 {
				return tl, nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if len(tl) == 0 {
		started()
	}
	return tl, fmt.Errorf("not settled in 30 s: saw %v, last error %v", tl, lastErr)
}

// tasksPoller asks w1's DNS server for tasks.web from the client
// replica, over one UDP socket.
func (nb *netBench) tasksPoller() (func() ([]string, error), func(), error) {
	var conn net.Conn
	if err := inNetns(nb.clientNS, func() (err error) { conn, err = net.Dial("udp", nb.dnsAddr); return err }); err != nil {
		return nil, nil, err
	}
	c := &mdns.Client{Timeout: time.Second}
	q := new(mdns.Msg).SetQuestion("tasks.web.", mdns.TypeA)
	poll := func() ([]string, error) {
		r, _, err := c.ExchangeWithConn(q, &mdns.Conn{Conn: conn})
		if err != nil {
			return nil, err
		}
		var addrs []string
		for _, a := range r.Answer {
			if rec, ok := a.(*mdns.A); ok {
				addrs = append(addrs, rec.A.String())
			}
		}
		slices.Sort(addrs)
		return addrs, nil
	}
	return poll, func() { conn.Close() }, nil
}

// vipPoller reads web's backends from the VIP map of w1's overlay rules
// (key: VIP . index, value: backend), over netlink in w1's namespace.
func (nb *netBench) vipPoller() (func() ([]string, error), func(), error) {
	f, err := os.Open(nb.w1NS)
	if err != nil {
		return nil, nil, err
	}
	conn, err := nftables.New(nftables.AsLasting(), nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("nftables in %s: %w", nb.w1NS, err)
	}
	table := &nftables.Table{Family: nftables.TableFamilyINet, Name: nb.rulesTable}
	vip := netip.MustParseAddr(nb.vip).As4()
	poll := func() ([]string, error) {
		set, err := conn.GetSetByName(table, "backends")
		if err != nil {
			return nil, err
		}
		elems, err := conn.GetSetElements(set)
		if err != nil {
			return nil, err
		}
		var addrs []string
		for _, e := range elems {
			if len(e.Key) >= 4 && [4]byte(e.Key[:4]) == vip && len(e.Val) == 4 {
				addrs = append(addrs, netip.AddrFrom4([4]byte(e.Val)).String())
			}
		}
		slices.Sort(addrs)
		return addrs, nil
	}
	return poll, func() { conn.CloseLasting(); f.Close() }, nil
}

// until calls cond every 20 ms until it returns nil, or for at most d,
// and returns its last error.
func until(d time.Duration, cond func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
