package raft

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/waitfor"
)

// slowElections makes the election timeout 20-40 s: an election within a
// few seconds can only be the lost-leader path's.
func slowElections(c *Config) {
	c.TickInterval = 200 * time.Millisecond
	c.ElectionTick = 100
}

// startSlowGroup starts three voters with slow elections and has the
// first campaign, so the test need not wait an election timeout for its
// first leader.
func startSlowGroup(t *testing.T) ([]*Node, *memNet, int) {
	t.Helper()
	net := newMemNet(t)
	nodes, _ := threeVoters(t, net, slowElections)
	// raft refuses to campaign until the bootstrap's membership entries
	// are applied: ask again until someone leads.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := nodes[0].rn.Campaign(context.Background()); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			for i, n := range nodes {
				if n.IsLeader() {
					return nodes, net, i
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Fatal("no leader 10s after asking member 0 to campaign")
	return nil, nil, -1
}

// A leader whose process ended: both followers told that their connection
// to it broke elect one of them at once, not after the election timeout.
func TestLostLeaderReplacedAtOnce(t *testing.T) {
	nodes, net, old := startSlowGroup(t)
	dead := nodes[old]
	deadID := dead.RaftID()
	net.isolate(deadID, true)
	if err := dead.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i, n := range nodes {
		if i != old {
			n.PeerLost(deadID)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for i, n := range nodes {
			if i != old && n.IsLeader() {
				t.Logf("member %d leads %v after the connections broke", i, time.Since(start))
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no new leader 5s after both followers lost the leader's connection (the election timeout is 20s or more)")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// One follower whose own connection to a live leader broke does not
// depose it: the other follower still hears from the leader and refuses
// the pre-vote, and the follower goes back to following the same leader.
func TestOneFollowerLosingTheLeaderDisruptsNothing(t *testing.T) {
	nodes, _, lead := startSlowGroup(t)
	leaderID := nodes[lead].RaftID()
	term := nodes[lead].rn.Status().Term
	follower := nodes[(lead+1)%3]
	follower.PeerLost(leaderID)
	// Past the first campaigner's turn and the second's.
	deadline := time.Now().Add(campaignSettle + 3*campaignStagger + time.Second)
	for time.Now().Before(deadline) {
		if st := nodes[lead].rn.Status(); !nodes[lead].IsLeader() || st.Term != term {
			t.Fatalf("the leader was deposed (leads %v, term %d, was %d) by one follower's lost connection", nodes[lead].IsLeader(), st.Term, term)
		}
		time.Sleep(10 * time.Millisecond)
	}
	deadline = time.Now().Add(5 * time.Second)
	for follower.rn.Status().Lead != leaderID {
		if time.Now().After(deadline) {
			t.Fatalf("the follower follows %x, want the leader %x again", follower.rn.Status().Lead, leaderID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A leader that stops hands leadership over first: another member leads
// before the leader stops, with elections far too slow to explain it.
func TestStoppingLeaderHandsOver(t *testing.T) {
	nodes, _, old := startSlowGroup(t)
	leader := nodes[old]
	// A leader hands over only to a follower it has heard from since its
	// election (HandOver's RecentActive): on a busy machine the first
	// answers can come after startSlowGroup returns.
	waitfor.Eventually(t, 5*time.Second, func() error {
		for id, pr := range leader.Status().Progress {
			if id != leader.RaftID() && !pr.RecentActive {
				return fmt.Errorf("the leader has not heard from %x since its election", id)
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	to, err := leader.HandOver(ctx)
	if err != nil || to == 0 {
		t.Fatalf("HandOver = %x, %v; want a voter", to, err)
	}
	if leader.IsLeader() {
		t.Fatal("still leads after handing over")
	}
	for _, n := range nodes {
		if n.RaftID() == to {
			deadline := time.Now().Add(5 * time.Second)
			for !n.IsLeader() {
				if time.Now().After(deadline) {
					t.Fatalf("%x was handed leadership but does not lead", to)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	// A follower has nothing to hand over.
	if to, err := leader.HandOver(ctx); to != 0 || err != nil {
		t.Fatalf("HandOver on a follower = %x, %v; want nothing", to, err)
	}
}
