package integration

// Multi-host tests of the manager group (docs/design.md §4–§6): real
// jacod processes, one per network namespace (netns_test.go), formed from
// join tokens and then grown, killed, paused and partitioned the way a
// production cluster is. Every assertion is one an operator relies on; every
// wait is for a condition, with a deadline, and reports what it last saw.
//
// This file holds the fixture: a cluster of managers on one hub, formed
// and grown through join tokens. What its members must agree on is in
// multihost_agreement_test.go; the tests are in multihost_*_test.go.

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"
)

// Deadlines. A join is a raft conf change (well under a second); a
// promotion waits PromoteAfter (3 s) and then one change per second, but
// today a nonvoter is often judged "not caught up" for several more
// seconds (progress RecentActive sampled just after CheckQuorum clears
// it); an election takes about a second (10 ticks of 100 ms). The
// deadlines are several times that, for a loaded two-core CI machine.
const (
	convergeTimeout = 45 * time.Second
	electionTimeout = 20 * time.Second
	writeTimeout    = 5 * time.Second // one CLI write, retried on no_leader
)

// voterTarget is the voter-set policy of docs/design.md §4: how many of the
// managers are voters.
func voterTarget(managers int) int {
	table := []int{0, 1, 1, 3, 3, 5, 5, 7} // index: manager count
	if managers >= len(table) {
		return 7
	}
	return table[managers]
}

// mcluster is a group of managers on one hub. managers are the raft
// members in join order, including any that are down right now.
type mcluster struct {
	hub      *hub
	managers []*nsDaemon
	ids      map[*nsDaemon]string // node ids, known from init and join
}

// newCluster forms a cluster of n managers: m1 inits it and the others join
// through it, each on a host of its own; it returns once every member agrees
// on the membership and the voters match the policy.
func newCluster(t testing.TB, n int, flags ...string) *mcluster {
	t.Helper()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	m1 := c.hub.addHost(t).startJacod(t, "m1", flags...)
	m1.initCluster(t)
	s, err := m1.tryStatus()
	if err != nil {
		t.Fatal(err)
	}
	c.managers, c.ids[m1] = []*nsDaemon{m1}, s.NodeID
	for len(c.managers) < n {
		c.addManager(t, m1, m1, flags...)
	}
	c.waitConverged(t, c.managers)
	return c
}

// addManager starts a new daemon on a new host and joins it as a manager,
// with a token issued through issuer and the join sent to peer. It does
// not wait for the cluster to settle.
func (c *mcluster) addManager(t testing.TB, issuer, peer *nsDaemon, flags ...string) *nsDaemon {
	t.Helper()
	hs := c.hub.addHost(t)
	d := hs.startJacod(t, fmt.Sprintf("m%d", hs.n), flags...)
	c.joined(t, d, d.join(peer, issuer.joinToken(t, "manager")))
	return d
}

// joinedLine is what `jaco node join` prints on success.
var joinedLine = regexp.MustCompile(`^Joined cluster \S+ as node (\S+)\.\n$`)

// joined records d, whose join printed r, as a member.
func (c *mcluster) joined(t testing.TB, d *nsDaemon, r result) {
	t.Helper()
	wantOK(t, r)
	m := joinedLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("node join printed %q, want %q", r.stdout, joinedLine)
	}
	c.managers, c.ids[d] = append(c.managers, d), m[1]
}

// byNodeID returns the manager whose node id is id, or nil. It asks no
// daemon, so it works while some are paused.
func (c *mcluster) byNodeID(id string) *nsDaemon {
	for d, did := range c.ids {
		if did == id && id != "" {
			return d
		}
	}
	return nil
}

// leader waits until the managers in ask agree on a leader and returns it.
func (c *mcluster) leader(t testing.TB, ask []*nsDaemon) *nsDaemon {
	t.Helper()
	var l *nsDaemon
	eventually(t, electionTimeout, func() error {
		id := ""
		for _, d := range ask {
			s, err := d.tryStatus()
			if err != nil {
				return err
			}
			if s.Leader == "" || (id != "" && s.Leader != id) {
				return fmt.Errorf("%s sees leader %q, others %q", d.name, s.Leader, id)
			}
			id = s.Leader
		}
		if l = c.byNodeID(id); l == nil {
			return fmt.Errorf("no manager has the leader's node id %s", id)
		}
		return nil
	})
	return l
}

// others returns c's managers except the given ones.
func (c *mcluster) others(except ...*nsDaemon) []*nsDaemon {
	var out []*nsDaemon
	for _, d := range c.managers {
		if !slices.Contains(except, d) {
			out = append(out, d)
		}
	}
	return out
}

// hosts returns the hosts of ds.
func hosts(ds ...*nsDaemon) []*host {
	out := make([]*host, len(ds))
	for i, d := range ds {
		out[i] = d.host
	}
	return out
}
