package raft

import (
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A member that stops leading (a hand-over, a step-down) last heard from a
// leader just now, itself: the removal probe waits from there, not from
// the last message of the leader before it.
func TestStoppingToLeadCountsAsLeaderContact(t *testing.T) {
	n := &Node{raftID: 1, wait: newWaitRegistry[error](), metrics: newNodeMetrics(), leaderChanged: make(chan struct{})}
	n.leaderContact.Store(time.Now().Add(-time.Hour).UnixNano())
	n.trackLeadership(raft.Ready{SoftState: &raft.SoftState{Lead: 1, RaftState: raft.StateLeader}, HardState: raftpb.HardState{Term: 2}})
	if got := n.SinceLeaderContact(); got != 0 {
		t.Fatalf("while leading: %v since a leader's contact, want 0", got)
	}
	before := time.Now()
	n.trackLeadership(raft.Ready{SoftState: &raft.SoftState{Lead: 2, RaftState: raft.StateFollower}})
	if since, bound := n.SinceLeaderContact(), time.Since(before); since > bound {
		t.Errorf("after leading: %v since a leader's contact, want at most the %v since it stopped leading", since, bound)
	}
}
