package integration

// The multi-host harness (docs/design.md §14): every jacod runs in its own
// network namespace, a "host", whose veth pair ends on a Linux bridge in a
// per-test "hub" namespace. Test hosts get addresses from 198.18.0.0/24, a
// range reserved for benchmarking and never routed, and are dialled only
// from inside namespaces: the root namespace never gets an interface, route
// or packet of theirs. The CLI reaches a daemon through its unix socket,
// which needs no network at all.
//
// The bridge lives in the hub namespace rather than the root one because a
// Docker engine on the machine sets the root namespace's FORWARD policy to
// DROP for bridged traffic. Partitions are nftables drop rules inside a
// host's namespace; a pause is SIGSTOP (the kernel has no netem).

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jaco-project/jaco/internal/testenv"
)

// jacodPort is where every test daemon listens. Fixed, because each daemon
// has a namespace (and an address) of its own: nothing else can hold it.
const jacodPort = 7000

// nsPrefix starts the name of every namespace this package creates, so
// leftovers are recognisable and never confused with anyone else's.
const nsPrefix = "jacotest-"

// netnsRun names this test process's namespaces: the pid tells a later run
// whether the run that made them is still alive (see sweepStaleNetns), and
// the random part keeps two runs apart even if they share a pid (separate
// pid namespaces sharing /run/netns).
var netnsRun = func() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s%d-%s-", nsPrefix, os.Getpid(), hex.EncodeToString(b))
}()

// hubSeq numbers the hubs of this run.
var hubSeq atomic.Int64

var (
	netnsOnce    sync.Once
	netnsSkipMsg string // why the suite cannot run here; "" when it can
)

// requireNetns skips t when this machine cannot run the multi-host suite:
// only when we are not root or `ip netns` does not work. Anything else that
// goes wrong later (creating a namespace, nft) fails the test instead,
// because CI, where we are root, must run these tests, not skip them.
func requireNetns(t testing.TB) {
	t.Helper()
	netnsOnce.Do(func() {
		if os.Geteuid() != 0 {
			netnsSkipMsg = "multi-host tests need root (network namespaces); run as root, as CI does"
			return
		}
		if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
			netnsSkipMsg = fmt.Sprintf("multi-host tests need iproute2's `ip netns` (apt-get install iproute2): %v %s", err, out)
			return
		}
		sweepStaleNetns()
	})
	if netnsSkipMsg != "" {
		testenv.SkipOrFail(t, "%s", netnsSkipMsg)
	}
}

// staleName matches the namespaces of a run of this package, capturing the
// pid of the test process that made them.
var staleName = regexp.MustCompile(`^` + regexp.QuoteMeta(nsPrefix) + `(\d+)-[0-9a-f]{6}-`)

// sweepStaleNetns deletes the namespaces left by earlier runs that died
// without their cleanups (a `go test -timeout` panic, a SIGKILL): only
// names of this package whose test process is gone. Their daemons died with
// that process (Pdeathsig), so the namespaces hold nothing but interfaces.
// A run any of whose namespaces still holds a process is left alone
// entirely: it may be alive in a pid namespace we cannot see.
func sweepStaleNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	runs := make(map[string][]string) // run prefix -> its namespaces
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleName.FindStringSubmatch(name)
		if m == nil || m[0] == netnsRun {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // that run is still going (or its pid was reused: leave it)
		}
		runs[m[0]] = append(runs[m[0]], name)
	}
	for _, names := range runs {
		if slices.ContainsFunc(names, func(ns string) bool {
			pids, _ := exec.Command("ip", "netns", "pids", ns).Output()
			return len(strings.TrimSpace(string(pids))) > 0
		}) {
			continue
		}
		for _, ns := range names {
			_ = exec.Command("ip", "netns", "delete", ns).Run()
		}
	}
}

// ipCmd runs `ip args...` (in the root namespace: managing namespaces and
// links, never dialling) and fails t with its output if it fails.
func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// hub is one test's network: a namespace holding a bridge that every host
// of the test is plugged into. Each test has its own hub, so two tests'
// hosts may share an address without ever seeing each other.
type hub struct {
	ns     string // the hub's namespace; hosts are named after it
	mu     sync.Mutex
	lastIP int // last host number handed out, 198.18.0.<lastIP>
}

// newHub creates a hub whose namespace and everything in it is deleted when
// t ends, pass or fail.
func newHub(t testing.TB) *hub {
	t.Helper()
	requireNetns(t)
	h := &hub{ns: fmt.Sprintf("%s%d", netnsRun, hubSeq.Add(1))}
	ipCmd(t, "netns", "add", h.ns)
	// Registered before any host's, so it runs after all of them (cleanups
	// run last-in first-out): the daemons are gone before the wiring is.
	t.Cleanup(func() { deleteNetns(t, h.ns) })
	ipCmd(t, "-n", h.ns, "link", "set", "lo", "up")
	ipCmd(t, "-n", h.ns, "link", "add", "br0", "type", "bridge")
	ipCmd(t, "-n", h.ns, "link", "set", "br0", "up")
	return h
}

// deleteNetns deletes a namespace; its interfaces (veth ends, the bridge,
// nftables tables) go with it.
func deleteNetns(t testing.TB, ns string) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
		t.Errorf("delete network namespace %s: %v %s", ns, err, out)
	}
}

// host is one test machine: a namespace with loopback and eth0 at
// 198.18.0.<n>/24, the other end of eth0 on the hub's bridge.
type host struct {
	ns string
	n  int    // host number within the hub
	ip string // 198.18.0.<n>
}

// addHost plugs a new host into the hub, with the next free address of
// this hub's pool. Its namespace is deleted when t ends.
func (h *hub) addHost(t testing.TB) *host {
	t.Helper()
	h.mu.Lock()
	if h.lastIP >= 126 {
		h.mu.Unlock()
		t.Fatal("hub address pool 198.18.0.1-126 exhausted")
	}
	h.lastIP++
	hs := &host{n: h.lastIP, ip: fmt.Sprintf("198.18.0.%d", h.lastIP)}
	hs.ns = fmt.Sprintf("%s-h%d", h.ns, hs.n)
	h.mu.Unlock()

	ipCmd(t, "netns", "add", hs.ns)
	t.Cleanup(func() { deleteNetns(t, hs.ns) })
	// The pair is created inside the hub namespace with its peer end
	// straight in the host's, so neither end ever exists in the root
	// namespace (where names could collide with other runs' or Docker's).
	port := fmt.Sprintf("p%d", hs.n)
	ipCmd(t, "-n", h.ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", hs.ns)
	ipCmd(t, "-n", h.ns, "link", "set", port, "master", "br0", "up")
	ipCmd(t, "-n", hs.ns, "link", "set", "lo", "up")
	// Hosts take the lower half of the /24; a node's container subnets
	// come from the upper half, and the runtime refuses an overlap.
	ipCmd(t, "-n", hs.ns, "addr", "add", hs.ip+"/25", "dev", "eth0")
	ipCmd(t, "-n", hs.ns, "link", "set", "eth0", "up")
	return hs
}

// addr is the host's jacod address.
func (hs *host) addr() string { return fmt.Sprintf("%s:%d", hs.ip, jacodPort) }

// exec runs a command inside the host's namespace; this is the only way
// the tests send anything to a 198.18.0.x address.
func (hs *host) exec(env []string, args ...string) result {
	return run("ip", env, append([]string{"netns", "exec", hs.ns}, args...)...)
}

// nftTable is the nftables table the partition rules live in, inside a
// host's namespace (never the root namespace's ruleset).
const nftTable = "jacotest"

// partition makes hs drop every packet to or from the given hosts, as a
// broken link between them would: nothing is refused, it just never
// arrives. It replaces an earlier partition of hs. Dropping on one side is
// enough to cut both directions of every connection.
func (hs *host) partition(t testing.TB, from ...*host) {
	t.Helper()
	if len(from) == 0 {
		t.Fatal("partition: no hosts to cut off")
	}
	ips := make([]string, len(from))
	for i, o := range from {
		ips[i] = o.ip
	}
	// One nft transaction: create-if-missing, delete, create anew, so a
	// second partition replaces the first atomically.
	ruleset := fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	set cut {
		type ipv4_addr
		elements = { %[2]s }
	}
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr @cut drop
	}
	chain output {
		type filter hook output priority filter; policy accept;
		ip daddr @cut drop
	}
}
`, nftTable, strings.Join(ips, ", "))
	hs.nft(t, ruleset)
}

// heal removes hs's partition, if any.
func (hs *host) heal(t testing.TB) {
	t.Helper()
	hs.nft(t, fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", nftTable))
}

func (hs *host) nft(t testing.TB, ruleset string) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatal("partitions need nftables' nft (apt-get install nftables; scripts/test.sh installs it)")
	}
	f := filepath.Join(t.TempDir(), "ruleset.nft")
	if err := os.WriteFile(f, []byte(ruleset), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := hs.exec(nil, "nft", "-f", f); r.err() != nil {
		t.Fatalf("nft in %s: %v\nruleset:\n%s", hs.ns, r.err(), ruleset)
	}
}
