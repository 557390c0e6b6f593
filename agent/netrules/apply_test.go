package netrules

import (
	"context"
	"net/netip"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/jaco-project/jaco/internal/testenv"
)

const testTable = "jaco-netrules-test"

// tableEvents watches table creations and deletions in n until t ends.
func tableEvents(t *testing.T, n netns) <-chan *nftables.MonitorEvent {
	t.Helper()
	mon := nftables.NewMonitor(nftables.WithMonitorObject(nftables.MonitorObjectTables))
	var events chan *nftables.MonitorEvent
	n.must(t, func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		events, err = conn.AddMonitor(mon)
		return err
	})
	t.Cleanup(func() { mon.Close() })
	return events
}

// changesUntilSentinel makes and deletes a sentinel table in n, then
// returns the names of the tables that changed before it did.
func changesUntilSentinel(t *testing.T, n netns, events <-chan *nftables.MonitorEvent) []string {
	t.Helper()
	const sentinel = "jaco-netrules-sentinel"
	n.must(t, func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		st := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: sentinel})
		conn.DelTable(st)
		return conn.Flush()
	})
	var changed []string
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("monitor closed; saw %v", changed)
			}
			if ev.Error != nil {
				t.Fatalf("monitor: %v", ev.Error)
			}
			tb, _ := ev.Data.(*nftables.Table)
			if tb == nil {
				continue
			}
			if tb.Name == sentinel {
				if ev.Type == nftables.MonitorEventTypeDelTable {
					return changed // the sentinel's last event
				}
				continue
			}
			changed = append(changed, tb.Name)
		case <-deadline:
			t.Fatalf("no sentinel event after 5s; saw %v", changed)
		}
	}
}

func TestApplySameStateChangesNothing(t *testing.T) {
	needRoot(t)
	n := newNetns(t, "apply")
	r := New(testTable)
	t.Cleanup(func() { n.do(r.Close) })
	s := State{
		Networks: networks(),
		VIPs: []VIP{
			{Addr: netip.MustParseAddr(vipX), Backends: mustAddrs(addrX1, addrX2)},
			{Addr: netip.MustParseAddr(vipEmpty)},
		},
	}
	apply := func(s State) { n.must(t, func() error { return r.Apply(context.Background(), s) }) }
	apply(s)
	events := tableEvents(t, n)

	// The same state in another order is the same state.
	same := State{Networks: slices.Clone(s.Networks), VIPs: []VIP{s.VIPs[1],
		{Addr: s.VIPs[0].Addr, Backends: mustAddrs(addrX2, addrX1, addrX2)}}}
	slices.Reverse(same.Networks)
	apply(same)
	if got := changesUntilSentinel(t, n, events); len(got) != 0 {
		t.Errorf("Apply of the same state changed tables %v", got)
	}

	// A changed state replaces the table: the check above can see it.
	s.VIPs[1].Backends = mustAddrs(addrX3)
	apply(s)
	if got := changesUntilSentinel(t, n, events); !slices.Contains(got, testTable) {
		t.Errorf("Apply of a new state changed tables %v, want %s among them", got, testTable)
	}

	// A table someone deleted comes back with the same state.
	n.must(t, func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		conn.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: testTable})
		return conn.Flush()
	})
	apply(s)
	if !tableExists(t, n, testTable) {
		t.Error("Apply of the same state did not load a deleted table again")
	}
}

func TestApplyRefusesBadStateAndKeepsRules(t *testing.T) {
	needRoot(t)
	n := newNetns(t, "bad")
	r := New(testTable)
	t.Cleanup(func() { n.do(r.Close) })
	good := State{Networks: networks()}
	n.must(t, func() error { return r.Apply(context.Background(), good) })
	events := tableEvents(t, n)
	bad := State{Networks: append(networks(), netip.MustParsePrefix("10.77.128.0/17"))}
	if err := n.do(func() error { return r.Apply(context.Background(), bad) }); err == nil {
		t.Fatal("Apply of overlapping networks = nil, want an error")
	}
	if got := changesUntilSentinel(t, n, events); len(got) != 0 {
		t.Errorf("a refused state changed tables %v", got)
	}
}

func TestCloseWithoutTable(t *testing.T) {
	needRoot(t)
	n := newNetns(t, "close")
	if err := n.do(New(testTable).Close); err != nil {
		t.Errorf("Close of a table never loaded = %v, want nil", err)
	}
}

// An operator's `nft list ruleset` must work on a node: nft aborts on
// set types it cannot size (a concatenation with "integer" did).
func TestNftListsTheTable(t *testing.T) {
	needRoot(t)
	if _, err := osexec.LookPath("nft"); err != nil {
		testenv.SkipOrFail(t, "nft missing (Debian package nftables): %v", err)
	}
	n := newNetns(t, "list")
	r := New(testTable)
	t.Cleanup(func() { n.do(r.Close) })
	n.must(t, func() error {
		return r.Apply(context.Background(), State{
			// 10.78/16 touches X: the kernel must take both gateways' ranges.
			Networks: append(networks(), netip.MustParsePrefix("10.78.0.0/16")),
			VIPs:     []VIP{{Addr: netip.MustParseAddr(vipX), Backends: mustAddrs(addrX1, addrX2)}},
			Gateways: mustAddrs(gwX, "10.78.0.1"),
			Ingress: &Ingress{Subnet: netip.MustParsePrefix(netX), Gateway: netip.MustParseAddr(gwX), Ports: []Published{
				{Proto: "tcp", Port: 8000, Target: 7000, Backends: mustAddrs(addrX1, addrX3)},
				{Proto: "udp", Port: 8001, Target: 53},
			}},
		})
	})
	out, err := osexec.Command("ip", "netns", "exec", string(n), "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	for _, want := range []string{
		"ip daddr @networks ip daddr . ip saddr != @same drop",
		"dnat ip to ip daddr . numgen random mod 2 map @backends",
		"10.77.255.194 : goto lb-2",
		"10.77.255.194 . 0x00000001 : 10.77.0.3",
		"ct status dnat ip saddr . ip daddr @hairpin masquerade",
		"10.77.0.0/16 : 10.77.0.1, 10.78.0.0/16 : 10.78.0.1",
		"tcp . 8000 . 0x00000001 : 10.77.0.66 . 7000",
		"elements = { udp . 8001 }",
		"dnat ip to meta l4proto . th dport . numgen random mod 2 map @ingress-backends",
		"ct mark & 0x10000000 != 0x00000000 ip daddr 10.77.0.0/16 accept",
		"ct mark & 0x10000000 != 0x00000000 ip daddr 10.77.0.0/16 snat ip to 10.77.0.1",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("nft list ruleset lacks %q:\n%s", want, out)
		}
	}
}
