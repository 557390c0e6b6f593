package integration

// Helpers of the manager address change test (multihost_address_test.go,
// docs/adr/0038): a host given a second address, a manager restarted on
// it, a writer that counts failed writes while that happens, and a count
// of the packets still sent to the old address.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/datadir"
)

// moveManager gives d's host a new address, stops d and starts it again
// listening on and advertising that address, on the same data dir: the
// same node, restarted with a new --advertise-addr. It returns the old
// address (host:port), still on the host.
func (c *mcluster) moveManager(t testing.TB, d *nsDaemon) (old string) {
	t.Helper()
	ip := c.hub.spareIP(t)
	// The new address is a secondary one of eth0's subnet; removing the
	// old (primary) one later must promote it, not take it along, as
	// Linux does by default.
	if r := d.host.exec(nil, "sysctl", "-q", "-w", "net.ipv4.conf.eth0.promote_secondaries=1"); r.err() != nil {
		t.Fatal(r.err())
	}
	d.host.runIP(t, "addr", "add", ip+"/25", "dev", "eth0")
	// The machine now lives at its new address: connections it opens
	// leave from there, as on a host that was given a new main address.
	// (Ones opened from the old address would hang once it is removed.)
	d.host.runIP(t, "route", "replace", "198.18.0.0/25", "dev", "eth0", "proto", "kernel", "scope", "link", "src", ip)
	old = d.addr()
	d.stop(t)
	d.at = net.JoinHostPort(ip, strconv.Itoa(jacodPort))
	d.start(t)
	return old
}

// dropAddress takes addr's IP off d's host: whoever still sends to it
// now gets no answer.
func dropAddress(t testing.TB, d *nsDaemon, addr string) {
	t.Helper()
	ip, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	d.host.runIP(t, "addr", "del", ip+"/25", "dev", "eth0")
}

// writeFailure is one write the writer saw refused or unanswered.
type writeFailure struct {
	at      time.Time
	through string
	reason  string // the reason word, "" when the CLI printed none
	stderr  string
}

func (f writeFailure) String() string {
	return fmt.Sprintf("%s through %s: %s %s", f.at.Format("15:04:05.000"), f.through, f.reason, f.stderr)
}

// writer writes through its managers in turn, one write at a time, until
// stopped, and keeps every failure. Writes go through each daemon's unix
// socket: what fails is the cluster, never the test's network.
type writer struct {
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	acked []time.Time // when each acknowledged write returned
	fails []writeFailure
}

func startWriter(through []*nsDaemon) *writer {
	w := &writer{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stopc:
				return
			default:
			}
			d := through[i%len(through)]
			r := d.jaco("--timeout", writeTimeout.String(), "node", "issue-join-token", "--role", "worker")
			w.mu.Lock()
			if r.code == 0 {
				w.acked = append(w.acked, time.Now())
			} else {
				w.fails = append(w.fails, writeFailure{at: time.Now(), through: d.name, reason: reasonOf(r), stderr: r.stderr})
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the writes and returns when each acknowledged write returned
// and the failures.
func (w *writer) stop() (acked []time.Time, fails []writeFailure) {
	close(w.stopc)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), slices.Clone(w.fails)
}

// addrCountTable is the nftables table counting packets to an old address,
// inside a host's namespace.
const addrCountTable = "jacoaddr"

// countPacketsTo starts counting, on each host, the packets it sends to
// addr (IP and port).
func countPacketsTo(t testing.TB, addr string, hs ...*host) {
	t.Helper()
	ip, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		h.nft(t, fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	chain output {
		type filter hook output priority filter; policy accept;
		ip daddr %[2]s tcp dport %[3]s counter
		ip daddr %[2]s tcp dport %[3]s tcp flags syn counter comment "dials"
	}
}
`, addrCountTable, ip, port))
	}
}

var packetsCounted = regexp.MustCompile(`counter packets (\d+)`)

// packetsSent returns how many packets h sent to the address
// countPacketsTo counts.
func packetsSent(t testing.TB, h *host) int {
	t.Helper()
	r := h.exec(nil, "nft", "list", "table", "inet", addrCountTable)
	if r.err() != nil {
		t.Fatal(r.err())
	}
	m := packetsCounted.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no counter in %s's table %s:\n%s", h.ns, addrCountTable, r.stdout)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// socketsTo lists h's TCP sockets to addr (IP and port) with their state
// and process, and its counters (how many of the packets were dials), for
// a failure's message: what still aims at an old address.
func socketsTo(h *host, addr string) string {
	r := h.exec(nil, "ss", "-tanpoi", "dst", addr)
	if r.err() != nil {
		return r.err().Error()
	}
	c := h.exec(nil, "nft", "list", "table", "inet", addrCountTable)
	return r.stdout + c.stdout
}

// wantNodeAddress waits until every one of ask lists node name (jaco node
// ls) at addr.
func wantNodeAddress(t testing.TB, ask []*nsDaemon, name, addr string) {
	t.Helper()
	for _, d := range ask {
		eventually(t, convergeTimeout, func() error {
			nodes, err := d.tryNodes()
			if err != nil {
				return err
			}
			for _, n := range nodes {
				if n.Hostname == name && n.Address == addr {
					return nil
				}
			}
			return fmt.Errorf("%s lists nodes %+v, want %s at %s", d.name, nodes, name, addr)
		})
	}
}

// savedManagers returns the managers' addresses a node keeps in its data
// dir for its next start (managers.json).
func (d *nsDaemon) savedManagers() ([]string, error) {
	b, err := os.ReadFile(datadir.Dir(d.dir).JoinManagers())
	if err != nil {
		return nil, err
	}
	var addrs []string
	return addrs, json.Unmarshal(b, &addrs)
}

// nodeState returns the state `jaco node ls` on d shows for node name.
func (d *nsDaemon) nodeState(name string) (string, error) {
	type stated struct {
		Hostname string `json:"hostname"`
		State    string `json:"state"`
	}
	nodes, err := decode[[]stated](d.jaco("node", "ls", "--format", "json"))
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Hostname == name {
			return n.State, nil
		}
	}
	return "", fmt.Errorf("%s does not list node %s", d.name, name)
}
