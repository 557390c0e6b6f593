package integration

// Multi-host tests of the manager group's membership: growing to seven
// managers and shrinking back, join tokens refused for each reason, and a
// removed manager that can no longer act as a member.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMultihostGrowAndShrink grows a cluster from one manager to seven, one
// join at a time, with tokens issued through different managers and joins
// sent to different peers (followers and nonvoters forward to the leader).
// After each join every member must agree on the membership and the voter
// count must be the policy's for that many managers. Then it shrinks back
// to one with `jaco node remove`, checking the same at every step.
func TestMultihostGrowAndShrink(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	for n := 2; n <= 7; n++ {
		// The newest manager (often still a nonvoter) issues the token
		// and the one before it takes the join: both forward to the
		// leader.
		cur := c.managers
		issuer, peer := cur[len(cur)-1], cur[max(len(cur)-2, 0)]
		start := time.Now()
		d := c.addManager(t, issuer, peer)
		v := c.waitConverged(t, c.managers)
		t.Logf("%d managers (%s: token via %s, joined via %s): %d voters after %v",
			n, d.name, issuer.name, peer.name, v.voters, time.Since(start).Round(10*time.Millisecond))
	}

	t.Run("shrink", func(t *testing.T) {
		for step := 0; len(c.managers) > 1; step++ {
			// Remove the leader every other step (it must hand over
			// leadership first), otherwise the newest manager; ask a
			// different manager that stays each time.
			victim := c.managers[len(c.managers)-1]
			if len(c.managers)%2 == 0 {
				victim = c.leader(t, c.managers)
			}
			rest := c.others(victim)
			asker := rest[step%len(rest)]
			start := time.Now()
			wantOK(t, asker.jaco("node", "remove", victim.name))
			// Told it was removed, it may shut down by itself; what it
			// says is TestMultihostRemovedNodeRefused's business.
			victim.allowExit()
			c.managers = rest
			v := c.waitConverged(t, c.managers)
			if slices.ContainsFunc(v.nodes, func(n string) bool { return strings.Contains(n, " "+victim.name+" ") }) {
				t.Fatalf("node ls still lists removed %s: %q", victim.name, v.nodes)
			}
			wantWritesThrough(t, c.managers)
			t.Logf("%d managers (removed %s through %s): %d voters after %v",
				len(c.managers), victim.name, asker.name, v.voters, time.Since(start).Round(10*time.Millisecond))
			victim.stop(t)
		}
	})
}

// TestMultihostJoinTokensRefused: a join token works once, until it
// expires, and only as issued. Every refusal, sent to a follower in another
// namespace and forwarded to the leader, names its reason and changes
// nothing, so the refused node can still join with a good token. Two nodes
// racing with one token: exactly one gets in.
func TestMultihostJoinTokensRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	m1 := c.managers[0]
	used := m1.joinToken(t, "manager")
	m2 := c.hub.addHost(t).startJacod(t, "m2")
	c.joined(t, m2, m2.join(m1, used))
	before := c.waitConverged(t, c.managers) // m1 leads, m2 follows (a nonvoter)

	const ttl = time.Millisecond
	expired := m2.joinToken(t, "manager", "--ttl", ttl.String())
	// The token's own lifetime, counted from when issuing returned (it was
	// minted before that): not a wait for a condition.
	time.Sleep(2 * ttl)
	// Well formed, with this cluster's CA fingerprint, but never issued.
	forged := used[:strings.LastIndex(used, "-")+1] + otherSecret(t, used)

	j := c.hub.addHost(t).startJacod(t, "joiner")
	for _, tc := range []struct {
		name, token, word string
	}{
		{"reused", used, "token_consumed"},
		{"expired", expired, "token_expired"},
		{"garbage", "JACO1-nonsense", "token_invalid"},
		{"never issued", forged, "token_invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, j.join(m2, tc.token, "--timeout", "10s"), 1, tc.word)
		})
	}
	for _, d := range c.managers {
		if v, err := d.view(); err != nil || !slices.Equal(v.members, before.members) || !slices.Equal(v.nodes, before.nodes) {
			t.Errorf("after refused joins %s has members %q, nodes %q (%v); want %q, %q as before",
				d.name, v.members, v.nodes, err, before.members, before.nodes)
		}
	}
	if s, err := j.tryStatus(); err != nil || s.State != "uninitialized" {
		t.Fatalf("refused joiner: state %q (%v), want uninitialized", s.State, err)
	}

	// Two joiners race with one token, through different managers.
	race := m2.joinToken(t, "manager")
	racers := []*nsDaemon{c.hub.addHost(t).startJacod(t, "racer-a"), c.hub.addHost(t).startJacod(t, "racer-b")}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, peer := range []*nsDaemon{m1, m2} {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = racers[i].join(peer, race) }()
	}
	wg.Wait()
	win := 0
	if results[0].code != 0 {
		win = 1
	}
	c.joined(t, racers[win], results[win])
	wantError(t, results[1-win], 1, "token_consumed")
	racers[1-win].stop(t)

	// The refused joiner is untouched: a fresh token lets it in.
	c.joined(t, j, j.join(m2, m2.joinToken(t, "manager")))
	c.waitConverged(t, c.managers)
}

// TestMultihostRemovedNodeRefused: `jaco node remove` takes a running
// manager out of the group. The removed member learns it and says so, and
// stops acting as a member: it either exits naming node_removed or stays
// up refusing writes with node_removed and naming no leader. Its raft
// traffic is refused, so it cannot disturb the others, who keep their
// leader and take writes.
func TestMultihostRemovedNodeRefused(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 4) // three voters and a nonvoter, so three remain
	leader := c.leader(t, c.managers)
	v, err := leader.view()
	if err != nil {
		t.Fatal(err)
	}
	var victim *nsDaemon
	for _, d := range c.others(leader) {
		if victim == nil && slices.ContainsFunc(v.status.Members, func(m member) bool {
			return m.Hostname == d.name && m.Suffrage == "VOTER"
		}) {
			victim = d
		}
	}
	if victim == nil {
		t.Fatalf("no voter besides the leader: %q", v.members)
	}
	rest := c.others(victim)
	wantOK(t, rest[len(rest)-1].jaco("node", "remove", victim.name))
	victim.allowExit() // checked below: it may exit, naming node_removed
	c.managers = rest
	v = c.waitConverged(t, rest)

	removed := regexp.MustCompile(`(?i)removed from the (raft group|cluster)`)
	eventually(t, convergeTimeout, func() error {
		if !removed.MatchString(victim.log()) {
			return fmt.Errorf("%s has not logged that it was removed", victim.name)
		}
		if !victim.running() {
			return nil
		}
		if w := reasonOf(victim.jaco("--timeout", "3s", "node", "issue-join-token")); w != "node_removed" {
			return fmt.Errorf("write through removed %s: reason %q, want node_removed", victim.name, w)
		}
		if s, err := victim.tryStatus(); err == nil && s.Leader != "" {
			return fmt.Errorf("removed %s still names leader %s", victim.name, s.Leader)
		}
		return nil
	})
	if !victim.running() {
		if err := victim.expectExit(t, stopTimeout); err == nil || !strings.Contains(victim.logSince(), "node_removed") {
			t.Errorf("removed %s exited with %v; want a failure naming node_removed", victim.name, err)
		}
	}

	// The removed member cannot unseat anyone: over several election
	// timeouts the leader stays and writes go on.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		now, err := agreement(rest, rest)
		if err != nil {
			t.Fatal(err)
		}
		if now.status.Leader != v.status.Leader {
			t.Fatalf("the leader changed from %s to %s after a removal", v.status.Leader, now.status.Leader)
		}
		wantWritesThrough(t, rest[:1])
	}
}
