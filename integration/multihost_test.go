package integration

// Multi-host tests of the manager group (issue 3, docs/design.md §4–§6): real
// jacod processes, one per network namespace (netns_test.go), formed from
// join tokens and then grown, killed, paused and partitioned the way a
// production cluster is. Every assertion is one an operator relies on; every
// wait is for a condition, with a deadline, and reports what it last saw.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
func newCluster(t *testing.T, n int, flags ...string) *mcluster {
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
func (c *mcluster) addManager(t *testing.T, issuer, peer *nsDaemon, flags ...string) *nsDaemon {
	t.Helper()
	hs := c.hub.addHost(t)
	d := hs.startJacod(t, fmt.Sprintf("m%d", hs.n), flags...)
	c.joined(t, d, d.join(peer, issuer.joinToken(t, "manager")))
	return d
}

// joinedLine is what `jaco node join` prints on success.
var joinedLine = regexp.MustCompile(`^Joined cluster \S+ as node (\S+)\.\n$`)

// joined records d, whose join printed r, as a member.
func (c *mcluster) joined(t *testing.T, d *nsDaemon, r result) {
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
func (c *mcluster) leader(t *testing.T, ask []*nsDaemon) *nsDaemon {
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

// view is what one manager says about the group: its members (sorted, in
// the fields every member must agree on), its leader and its node list.
type view struct {
	name    string
	status  clusterStatus
	members []string // "hostname raft_id address suffrage"
	voters  int
	nodes   []string // "id hostname role address"
}

func (d *nsDaemon) view() (view, error) {
	v := view{name: d.name}
	s, err := d.tryStatus()
	if err != nil {
		return v, err
	}
	v.status = s
	for _, m := range s.Members {
		v.members = append(v.members, fmt.Sprintf("%s %s %s %s", m.Hostname, m.RaftID, m.Address, m.Suffrage))
		if m.Suffrage == "VOTER" {
			v.voters++
		}
	}
	slices.Sort(v.members)
	nodes, err := d.tryNodes()
	if err != nil {
		return v, err
	}
	for _, n := range nodes {
		v.nodes = append(v.nodes, fmt.Sprintf("%s %s %s %s", n.ID, n.Hostname, n.Role, n.Address))
	}
	slices.Sort(v.nodes)
	return v, nil
}

// agreement checks that every manager in ask sees the same group of
// exactly members (names and addresses), with a leader among them, the
// policy's number of voters, and the same node list; it returns the first
// view when they agree.
func agreement(members, ask []*nsDaemon) (view, error) {
	var ref view
	for i, d := range ask {
		v, err := d.view()
		if err != nil {
			return ref, err
		}
		s := v.status
		if s.State != "ready" || s.Leader == "" {
			return ref, fmt.Errorf("%s: state %s, leader %q; want ready with a leader", d.name, s.State, s.Leader)
		}
		if i == 0 {
			ref = v
			if err := wantMembers(v, members); err != nil {
				return ref, err
			}
			continue
		}
		if s.Leader != ref.status.Leader || !slices.Equal(v.members, ref.members) {
			return ref, fmt.Errorf("%s sees leader %s, members %q; %s sees leader %s, members %q",
				d.name, s.Leader, v.members, ref.name, ref.status.Leader, ref.members)
		}
		if !slices.Equal(v.nodes, ref.nodes) {
			return ref, fmt.Errorf("%s lists nodes %q; %s lists %q", d.name, v.nodes, ref.name, ref.nodes)
		}
	}
	return ref, nil
}

// wantMembers checks one view against the managers that should be members.
func wantMembers(v view, members []*nsDaemon) error {
	s := v.status
	var got, want []string
	for _, m := range s.Members {
		got = append(got, m.Hostname+"@"+m.Address)
	}
	for _, d := range members {
		want = append(want, d.name+"@"+d.addr())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: members %q, want %q", v.name, got, want)
	}
	if target := voterTarget(len(members)); v.voters != target {
		return fmt.Errorf("%s: %d voters among %d managers, want %d: %q", v.name, v.voters, len(members), target, v.members)
	}
	if len(v.nodes) != len(members) {
		return fmt.Errorf("%s: node ls lists %d nodes, want %d: %q", v.name, len(v.nodes), len(members), v.nodes)
	}
	return nil
}

// waitConverged waits until all of c's managers agree (see agreement),
// asking the given ones (the others may be down or cut off).
func (c *mcluster) waitConverged(t *testing.T, ask []*nsDaemon) view {
	t.Helper()
	var v view
	eventually(t, convergeTimeout, func() (err error) {
		v, err = agreement(c.managers, ask)
		return err
	})
	return v
}

// firstWrite writes through the given managers in turn until one write is
// acknowledged and returns how long that took from start.
func firstWrite(t *testing.T, start time.Time, through []*nsDaemon) time.Duration {
	t.Helper()
	var took time.Duration
	eventually(t, electionTimeout, func() error {
		var errs []string
		for _, d := range through {
			err := d.write(time.Second)
			if err == nil {
				took = time.Since(start)
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("no write acknowledged: %s", strings.Join(errs, "; "))
	})
	return took
}

// wantLeaderless waits until each of ds (what: how the test calls them)
// names no leader, and requires a write through it to fail with no_leader
// or quorum_lost rather than be acknowledged by a group that cannot commit
// it.
func wantLeaderless(t *testing.T, ds []*nsDaemon, what string) {
	t.Helper()
	for _, d := range ds {
		eventually(t, electionTimeout, func() error {
			s, err := d.tryStatus()
			if err != nil {
				return err
			}
			if s.Leader != "" {
				return fmt.Errorf("%s %s still names leader %s", what, d.name, s.Leader)
			}
			return nil
		})
		r := d.jaco("--timeout", "2s", "node", "issue-join-token", "--role", "worker")
		if w := reasonOf(r); w != "no_leader" && w != "quorum_lost" {
			t.Errorf("write through %s %s: exit %d, stderr %q; want no_leader or quorum_lost", what, d.name, r.code, r.stderr)
		}
	}
}

// wantWritesThrough requires a write through each of ds to be acknowledged.
func wantWritesThrough(t *testing.T, ds []*nsDaemon) {
	t.Helper()
	for _, d := range ds {
		eventually(t, electionTimeout, func() error { return d.write(writeTimeout) })
	}
}

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

// TestMultihostLeaderKill: SIGKILL the leader of three managers; the two
// left elect a new leader and acknowledge writes through either of them.
// The time from the kill to the first acknowledged write is what clients
// of a failed-over cluster wait; it is logged.
func TestMultihostLeaderKill(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	rest := c.killLeader(t)
	c.waitConverged(t, rest)
}

// killLeader SIGKILLs the leader of c's managers, logs how long the
// first write acknowledged by the others took, and requires them to
// elect another leader and acknowledge a write through each. It returns
// the others.
func (c *mcluster) killLeader(t *testing.T) (rest []*nsDaemon) {
	t.Helper()
	old := c.leader(t, c.managers)
	rest = c.others(old)
	start := time.Now()
	old.kill(t)
	took := firstWrite(t, start, rest)
	t.Logf("leader %s SIGKILLed: first write acknowledged after %v", old.name, took.Round(time.Millisecond))
	if l := c.leader(t, rest); l == old {
		t.Fatalf("survivors name the killed %s as leader", old.name)
	}
	wantWritesThrough(t, rest)
	return rest
}

// TestMultihostLeaderPause: a SIGSTOPped leader looks alive at the TCP
// level but never answers. The others elect a new leader and take writes,
// including a join the old leader misses. After SIGCONT the old leader
// steps down to follow the new one and catches up: its node list equals
// the others'.
func TestMultihostLeaderPause(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	old := c.leader(t, c.managers)
	rest := c.others(old)

	start := time.Now()
	old.pause(t)
	took := firstWrite(t, start, rest)
	t.Logf("leader %s SIGSTOPped: first write acknowledged after %v", old.name, took.Round(time.Millisecond))
	if l := c.leader(t, rest); l == old {
		t.Fatalf("survivors still follow the paused %s", old.name)
	}
	wantWritesThrough(t, rest)

	// A membership change the paused leader misses: four managers, three
	// voters (the new one stays a nonvoter).
	m4 := c.addManager(t, rest[0], rest[1])
	c.waitConverged(t, append(slices.Clone(rest), m4))

	old.resume(t)
	v := c.waitConverged(t, c.managers)
	if l := c.byNodeID(v.status.Leader); l == old {
		t.Fatalf("resumed %s leads again; the group had moved on", old.name)
	}
	wantWritesThrough(t, []*nsDaemon{old})
}

// TestMultihostMinorityPartition cuts two of five managers, the leader
// among them, off from the other three with nftables. The majority elects
// a leader and keeps taking writes, including a join; the minority keeps
// serving reads of what it knew. After the partition heals the minority
// catches up (same members, same node list) without unseating the
// majority's leader (PreVote: a cut-off member cannot disrupt on return).
func TestMultihostMinorityPartition(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 5)
	before := c.waitConverged(t, c.managers)
	oldLeader := c.leader(t, c.managers)
	minority := []*nsDaemon{oldLeader}
	for _, d := range c.others(oldLeader) {
		if len(minority) < 2 {
			minority = append(minority, d)
		}
	}
	majority := c.others(minority...)
	// The host of the manager that will join during the partition exists
	// beforehand, so the minority can be cut off from it too.
	joinerHost := c.hub.addHost(t)
	joiner := joinerHost.startJacod(t, fmt.Sprintf("m%d", joinerHost.n))
	for _, d := range minority {
		d.host.partition(t, append(hosts(majority...), joinerHost)...)
	}
	start := time.Now()

	took := firstWrite(t, start, majority)
	t.Logf("minority %s, %s cut off: majority acknowledged a write after %v",
		minority[0].name, minority[1].name, took.Round(time.Millisecond))
	newLeader := c.leader(t, majority)
	if slices.Contains(minority, newLeader) {
		t.Fatalf("majority follows %s, which is cut off", newLeader.name)
	}
	wantWritesThrough(t, majority)

	// The cut-off side must not pretend: the old leader steps down (check
	// quorum) and neither names a leader.
	wantLeaderless(t, minority, "cut-off")

	t.Run("minority says quorum_lost", func(t *testing.T) {
		type quorumStatus struct {
			QuorumLost bool `json:"quorum_lost"`
		}
		for _, d := range minority {
			// The quorum-loss window is 10 s of no leader.
			eventually(t, 30*time.Second, func() error {
				s, err := decode[quorumStatus](d.jaco("cluster", "status", "--format", "json"))
				if err != nil {
					return err
				}
				if !s.QuorumLost {
					return fmt.Errorf("%s: status says quorum_lost false", d.name)
				}
				return nil
			})
			wantError(t, d.jaco("--timeout", "3s", "node", "issue-join-token"), 1, "quorum_lost")
		}
		for _, d := range majority {
			s, err := decode[quorumStatus](d.jaco("cluster", "status", "--format", "json"))
			if err != nil || s.QuorumLost {
				t.Errorf("%s (majority): quorum_lost %v (%v), want false", d.name, s.QuorumLost, err)
			}
		}
	})

	// A join the minority misses. Meanwhile the minority still answers
	// reads from its own store, with the membership it last knew.
	wantOK(t, joiner.join(majority[1], majority[0].joinToken(t, "manager")))
	c.managers = append(c.managers, joiner)
	c.waitConverged(t, append(slices.Clone(majority), joiner))
	for _, d := range minority {
		if v, err := d.view(); err != nil || !slices.Equal(v.nodes, before.nodes) {
			t.Errorf("cut-off %s lists %q (%v), want what it knew: %q", d.name, v.nodes, err, before.nodes)
		}
	}

	healed := time.Now()
	for _, d := range minority {
		d.host.heal(t)
	}
	v := c.waitConverged(t, c.managers)
	t.Logf("healed: minority caught up after %v", time.Since(healed).Round(time.Millisecond))
	if l := c.byNodeID(v.status.Leader); l != newLeader {
		t.Errorf("healing the partition changed the leader from %s to %v", newLeader.name, l)
	}
	wantWritesThrough(t, minority)
}

// snapshotRestored is what go.etcd.io/raft logs (at debug level) when a
// follower installs a snapshot the leader sent it. A member restarting
// from its own snapshot does not log it.
var snapshotRestored = regexp.MustCompile(`restored snapshot \[index: \d+`)

// TestMultihostSnapshotCatchUp: a manager that was down while the others
// moved on further than the leader keeps log for (a snapshot every 5
// entries, and 500 entries kept for slow followers) is brought back with a
// snapshot, and then has everything: the join it missed and the writes.
func TestMultihostSnapshotCatchUp(t *testing.T) {
	t.Parallel()
	flags := []string{"--snapshot-interval", "5", "--log-level", "debug"}
	c := newCluster(t, 3, flags...)
	leader := c.leader(t, c.managers)
	lagging := c.others(leader)[0]
	rest := c.others(lagging)
	lagging.kill(t)

	// A join it misses, then more writes than the leader keeps behind its
	// snapshot for slow followers (raft.DefaultLogEntriesForSlowFollowers,
	// 500; jacod has no flag for it), so the log it needs is gone.
	c.addManager(t, rest[0], rest[1], flags...)
	c.waitConverged(t, c.others(lagging))
	const writes, writers = 560, 4
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			through := rest[w%len(rest)]
			for done.Add(1) <= writes {
				if err := through.write(writeTimeout); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("write while %s was down: %v", lagging.name, err)
	}
	t.Logf("%d writes while %s was down took %v", writes, lagging.name, time.Since(start).Round(time.Millisecond))

	back := time.Now()
	lagging.restart(t)
	v := c.waitConverged(t, c.managers)
	t.Logf("%s caught up %v after restart", lagging.name, time.Since(back).Round(time.Millisecond))
	if !snapshotRestored.MatchString(lagging.logSince()) {
		t.Errorf("%s caught up without installing a snapshot from the leader (no %q in its log)", lagging.name, snapshotRestored)
	}
	if got, err := lagging.view(); err != nil || !slices.Equal(got.nodes, v.nodes) {
		t.Errorf("%s lists %q (%v), want %q", lagging.name, got.nodes, err, v.nodes)
	}
	wantWritesThrough(t, []*nsDaemon{lagging})
}

// TestMultihostRejoinResolveAddress: a manager that was down while two
// managers joined and became voters comes back to a cluster whose only
// possible leaders are those two, which it has never heard of. It can vote
// for them and follow them only by asking a member it knows for their
// addresses (Raft.ResolveAddress): without that the group has no quorum.
//
// m1 leads m1..m3; m3 is killed; m4 and m5 join and are promoted (five
// voters). Then m2 is cut off from m4 and m5 (it still reaches m3) and m1
// is paused: of the five voters only m3, m4 and m5 can form a majority,
// and m3 knows nobody of them but m2. After the restart of m3 a leader
// among m4 and m5 is elected, and m3 catches up and takes writes.
func TestMultihostRejoinResolveAddress(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	m1 := c.leader(t, c.managers)
	others := c.others(m1)
	m2, m3 := others[0], others[1]

	m3.kill(t)
	m4 := c.addManager(t, m1, m2)
	m5 := c.addManager(t, m2, m1)
	c.waitConverged(t, []*nsDaemon{m1, m2, m4, m5}) // five voters, m3 down

	m2.host.partition(t, m4.host, m5.host)
	m1.pause(t)
	start := time.Now()
	m3.restart(t)

	newLeaders := []*nsDaemon{m4, m5}
	eventually(t, convergeTimeout, func() error {
		s, err := m3.tryStatus()
		if err != nil {
			return err
		}
		if l := c.byNodeID(s.Leader); !slices.Contains(newLeaders, l) {
			return fmt.Errorf("m3 sees leader %q, want m4 or m5", s.Leader)
		}
		return nil
	})
	t.Logf("m3 follows a leader it had never heard of %v after its restart", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(m3.logSince(), "resolved raft peer address") {
		t.Errorf("m3 never logged resolving a peer's address")
	}
	wantWritesThrough(t, []*nsDaemon{m3})
	c.waitConverged(t, []*nsDaemon{m3, m4, m5})
	v, err := m3.view()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range newLeaders {
		if !slices.ContainsFunc(v.status.Members, func(m member) bool { return m.Hostname == d.name && m.Address == d.addr() }) {
			t.Errorf("m3's status lacks %s at %s: %+v", d.name, d.addr(), v.status.Members)
		}
	}

	m1.resume(t)
	m2.host.heal(t)
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

// reasonOf returns the reason word of a failed CLI call ("error: <word>:
// ..."), or "" when it succeeded or printed something else.
func reasonOf(r result) string {
	if r.code == 0 {
		return ""
	}
	rest, ok := strings.CutPrefix(r.stderr, "error: ")
	if !ok {
		return ""
	}
	word, _, _ := strings.Cut(rest, ":")
	return word
}
