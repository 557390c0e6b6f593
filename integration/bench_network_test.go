package integration

// The network benchmark (docs/bench/network.md): the overlay's data path
// and control path on a three-worker container cluster, each beside a
// reference measured in the same run.

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
//     store's timestamp) to its appearance in both; at least minKills
//     kills, whatever b.N.
//
// The samples are timed one by one; medians and p99 are reported with
// b.ReportMetric (ns/op is the time of one iteration, both paths).
func BenchmarkNetwork(b *testing.B) {
	nb := setUpNetBench(b) // torn down by b's cleanups, after the sub-benchmarks
	b.Run("throughput", nb.throughput)
	b.Run("rtt", nb.rtt)
	b.Run("dns", nb.dns)
	// Last: it kills the replica the data-path servers live in.
	b.Run("propagation", nb.propagation)
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
	w1Pid      int    // jacod of w1 (its wireguard-go)
	w2Pid      int
}

const benchPort = 5201

func setUpNetBench(t testing.TB) *netBench {
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
	nb.w1Pid, nb.w2Pid = c.byName("w1").pid(), c.byName("w2").pid()
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

// cpuUse is CPU time in seconds: the machine's (every CPU's busy time,
// interrupts and softirqs included), and of it the two jacods' and this
// process's (all threads).
type cpuUse struct{ machine, w1, w2, bench float64 }

func (u cpuUse) minus(v cpuUse) cpuUse {
	return cpuUse{u.machine - v.machine, u.w1 - v.w1, u.w2 - v.w2, u.bench - v.bench}
}

func (u cpuUse) plus(v cpuUse) cpuUse {
	return cpuUse{u.machine + v.machine, u.w1 + v.w1, u.w2 + v.w2, u.bench + v.bench}
}

// userHZ is the unit of /proc's CPU times: USER_HZ, 100 on every Linux
// architecture Go runs on.
const userHZ = 100

func (nb *netBench) cpuNow() (cpuUse, error) {
	var u cpuUse
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return u, err
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return u, fmt.Errorf("/proc/stat starts %q", line)
	}
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return u, fmt.Errorf("/proc/stat: %w", err)
		}
		u.machine += n / userHZ
	}
	for _, p := range []struct {
		pid int
		to  *float64
	}{{nb.w1Pid, &u.w1}, {nb.w2Pid, &u.w2}, {os.Getpid(), &u.bench}} {
		if *p.to, err = processCPU(p.pid); err != nil {
			return u, err
		}
	}
	return u, nil
}

// processCPU is utime+stime of process pid, in seconds.
func processCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// After the command's closing parenthesis: state is field 3, utime
	// and stime fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return (ut + st) / userHZ, nil
}
