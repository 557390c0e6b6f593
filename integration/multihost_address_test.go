package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// dialWindow is how long nothing may be sent to a moved manager's old
// address for the test to say nothing dials it any more: longer than the
// longest redial backoff of a node's connections (2 s, node.dialPeer) and
// the role check interval (2 s), so a connection or loop still aiming at
// the old address would show in it.
const dialWindow = 3 * time.Second

// TestMultihostManagerAddressChange (docs/adr/0038): three managers formed
// with init and join tokens, and a worker, while writes go on through the
// managers that stay put. A follower, then the leader, is stopped and
// started again on a new address of its host (a new --advertise-addr, same
// data dir). Each time: every manager's `cluster status` and `node ls` show
// the new address; the moved manager catches up (a label written elsewhere
// reaches it) and takes writes; once the old address is gone from its
// host the leader reports it reachable and no host sends anything more to
// the old address; the worker keeps the new address for its next start
// and stays ready. Writes through the two managers that stay never fail
// while a follower moves; while the leader moves they fail only until the
// first write acknowledged after its stop (the election), and only with
// no_leader or outcome_unknown. Last, a manager restarted advertising the
// worker's address is refused address_in_use and stays where it was.
func TestMultihostManagerAddressChange(t *testing.T) {
	c := newCluster(t, 3)
	lead := c.leader(t, c.managers)
	follower := c.others(lead)[0]
	worker := c.hub.addHost(t).startJacod(t, "w1")
	// Joined through the manager that moves first: its address is the
	// one the worker knows first.
	wantOK(t, worker.join(follower, lead.joinToken(t, "worker")))
	eventually(t, convergeTimeout, func() error { return wantNodeState(lead, worker.name, "ready") })

	steady := c.others(follower)
	w := startWriter(steady)
	c.moveAndCheck(t, follower, steady, worker, "1")
	acked, fails := w.stop()
	t.Logf("follower moved: %d writes acknowledged, %d failed, through %s and %s", len(acked), len(fails), steady[0].name, steady[1].name)
	if len(fails) != 0 {
		t.Errorf("writes through the managers that stayed failed while a follower moved: %v", fails)
	}
	if len(acked) < 5 {
		t.Errorf("only %d writes acknowledged while a follower moved: writes did not go on", len(acked))
	}

	lead = c.leader(t, c.managers)
	steady = c.others(lead)
	w = startWriter(steady)
	stopped := time.Now()
	c.moveAndCheck(t, lead, steady, worker, "2")
	acked, fails = w.stop()
	i := slices.IndexFunc(acked, func(at time.Time) bool { return at.After(stopped) })
	if i < 0 {
		t.Fatalf("no write acknowledged after the leader stopped; failures: %v", fails)
	}
	resumed := acked[i]
	t.Logf("leader moved: %d writes acknowledged, %d failed; writes resumed %v after the leader stopped",
		len(acked), len(fails), resumed.Sub(stopped).Round(time.Millisecond))
	for _, f := range fails {
		if f.at.After(resumed) || (f.reason != "no_leader" && f.reason != "outcome_unknown") {
			t.Errorf("write failure outside the election after the leader stopped (writes resumed %s): %v", resumed.Format("15:04:05.000"), f)
		}
	}

	// A manager restarted advertising an address another node is
	// recorded at (the worker's) is refused address_in_use, says so in
	// its log, and stays recorded where it was.
	third := c.others(follower, lead)[0]
	third.stop(t)
	flags := third.flags
	third.flags = append(slices.Clone(flags), "--advertise-addr", worker.addr())
	third.start(t)
	eventually(t, convergeTimeout, func() error {
		if !strings.Contains(third.logSince(), "error: address_in_use: ") {
			return fmt.Errorf("%s, advertising %s, logged no address_in_use refusal", third.name, worker.addr())
		}
		return nil
	})
	wantMemberAddress(t, c.managers, third)
	wantNodeAddress(t, c.managers, third.name, third.addr())
	wantNodeAddress(t, c.managers, worker.name, worker.addr())
	third.stop(t)
	third.flags = flags
	third.start(t)
	wantWritesThrough(t, c.managers)
}

// moveAndCheck restarts manager d on a new address while the cluster
// runs, and checks what an operator relies on afterwards (see
// TestMultihostManagerAddressChange). steady are managers that do not
// move; mark is a label value unique to this move.
func (c *mcluster) moveAndCheck(t *testing.T, d *nsDaemon, steady []*nsDaemon, worker *nsDaemon, mark string) {
	t.Helper()
	old := c.moveManager(t, d)
	restarted := time.Now()
	t.Logf("%s restarted at %s (was %s)", d.name, d.addr(), old)
	wantMemberAddress(t, c.managers, d)
	wantNodeAddress(t, c.managers, d.name, d.addr())
	t.Logf("every manager shows %s at %s, in status and node ls, within %v of its restart", d.name, d.addr(), time.Since(restarted).Round(time.Millisecond))
	for _, line := range strings.Split(d.logSince(), "\n") {
		if strings.Contains(line, "address changed") || strings.Contains(line, "new address") {
			t.Logf("%s: %s", d.name, line) // what the address loop said
		}
	}
	wantWritesThrough(t, []*nsDaemon{d})
	wantOK(t, steady[0].jaco("node", "update", "--label-add", "moved="+mark, d.name))
	wantLabelEverywhere(t, c.managers, d.name, "moved", mark)

	dropAddress(t, d, old)
	eventually(t, convergeTimeout, func() error {
		l := c.leader(t, c.managers)
		if s, err := l.memberStatus(d.name); err != nil || s != "READY" {
			return fmt.Errorf("leader %s shows %s as %q (%v), want READY", l.name, d.name, s, err)
		}
		return nil
	})
	for _, n := range append(c.others(d), worker) {
		eventually(t, convergeTimeout, func() error {
			saved, err := n.savedManagers()
			if err != nil {
				return err
			}
			if !slices.Contains(saved, d.addr()) || slices.Contains(saved, old) {
				return fmt.Errorf("%s keeps managers %q for its next start, want %s and not %s", n.name, saved, d.addr(), old)
			}
			return nil
		})
	}
	eventually(t, convergeTimeout, func() error { return wantNodeState(d, worker.name, "ready") })
	// Nothing may aim at the old address any more: no raft peer, leader
	// forwarding, role check or agent session.
	watched := append(hosts(c.managers...), worker.host)
	countPacketsTo(t, old, watched...)
	time.Sleep(dialWindow) // a window in which a redial would show, not a wait for a condition
	for _, h := range watched {
		if n := packetsSent(t, h); n != 0 {
			t.Errorf("%s sent %d packets to %s, the address %s left, within %v; its sockets to it now:\n%s",
				h.ns, n, old, d.name, dialWindow, socketsTo(h, old))
		}
	}
}

// wantNodeState checks that d's `node ls` shows node name in state.
func wantNodeState(d *nsDaemon, name, state string) error {
	got, err := d.nodeState(name)
	if err != nil {
		return err
	}
	if got != state {
		return fmt.Errorf("%s shows node %s %s, want %s", d.name, name, got, state)
	}
	return nil
}

// wantMemberAddress waits until every one of ask has a leader and lists
// member d at d's address in `cluster status`.
func wantMemberAddress(t testing.TB, ask []*nsDaemon, d *nsDaemon) {
	t.Helper()
	for _, a := range ask {
		eventually(t, convergeTimeout, func() error {
			s, err := a.tryStatus()
			if err != nil {
				return err
			}
			i := slices.IndexFunc(s.Members, func(m member) bool { return m.Hostname == d.name })
			if s.Leader == "" || i < 0 || s.Members[i].Address != d.addr() {
				return fmt.Errorf("%s: leader %q, members %+v; want a leader and %s at %s", a.name, s.Leader, s.Members, d.name, d.addr())
			}
			return nil
		})
	}
}
