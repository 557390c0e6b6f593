package integration

// Multi-host tests of failover: a leader killed, a leader paused, and a
// partition cutting the leader off with a minority; the rest elect a new
// leader and go on taking writes.

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

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
func (c *mcluster) killLeader(t testing.TB) (rest []*nsDaemon) {
	t.Helper()
	old := c.leader(t, c.managers)
	rest = c.others(old)
	before, err := rest[0].tryStatus()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	old.kill(t)
	took := firstWrite(t, start, rest)
	t.Logf("leader %s SIGKILLed: first write acknowledged after %v", old.name, took.Round(time.Millisecond))
	if l := c.leader(t, rest); l == old {
		t.Fatalf("survivors name the killed %s as leader", old.name)
	}
	// The election shows in the raft term cluster status reports.
	if after, err := rest[0].tryStatus(); err != nil || before.RaftTerm == 0 || after.RaftTerm <= before.RaftTerm {
		t.Errorf("%s's raft term %d before the kill, %d after (%v); want it to rise with the election", rest[0].name, before.RaftTerm, after.RaftTerm, err)
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
