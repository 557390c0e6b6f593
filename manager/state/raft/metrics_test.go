package raft

import (
	"context"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/metrics/metricstest"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// TestMetricsOfAGroup: the leader and a follower each report their own
// view, and the leader sees a member cut off as unreachable.
func TestMetricsOfAGroup(t *testing.T) {
	net := newMemNet(t)
	nodes, _ := threeVoters(t, net)
	lead := leaderOf(t, nodes, -1)
	follower := (lead + 1) % 3
	propose(t, nodes[lead], "a", "1")
	if err := nodes[follower].Propose(context.Background(), rafttest.Put("b", "2")); err == nil {
		t.Fatal("a follower took a proposal")
	}

	// One commit needs two of three: the leader may not have heard the
	// third member yet. It counts as reachable once it has.
	reachable := `jaco_raft_members{status="reachable",suffrage="voter"}`
	deadline := time.Now().Add(5 * time.Second)
	for metricstest.Samples(t, nodes[lead].Collector())[reachable] != 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := metricstest.Samples(t, nodes[lead].Collector())
	want := map[string]float64{
		"jaco_raft_is_leader":                                    1,
		"jaco_raft_has_leader":                                   1,
		"jaco_raft_proposals_committed_total":                    1,
		"jaco_raft_proposals_failed_total":                       0,
		`jaco_raft_members{status="reachable",suffrage="voter"}`: 3,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("leader: %s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
	if got["jaco_raft_term"] < 1 || got["jaco_raft_leader_changes_total"] < 1 || got["jaco_raft_wal_fsync_duration_seconds_count"] < 1 {
		t.Errorf("leader: term, leader changes and WAL syncs must be counted: %v", got)
	}
	// The leader applied its election's empty entry and the proposal, in
	// one Ready or more.
	if n := got["jaco_raft_ready_committed_entries_count"]; n < 1 {
		t.Errorf("leader: %v Readies with committed entries counted, want 1 at least: %v", n, got)
	}

	got = metricstest.Samples(t, nodes[follower].Collector())
	for name, v := range map[string]float64{
		"jaco_raft_is_leader":                                  0,
		"jaco_raft_has_leader":                                 1,
		"jaco_raft_proposals_committed_total":                  0,
		`jaco_raft_members{status="unknown",suffrage="voter"}`: 3,
	} {
		if got[name] != v {
			t.Errorf("follower: %s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}

	// raft counts a follower active when it heard from it within an
	// election timeout (10 ticks of 10 ms here).
	net.isolate(nodes[follower].RaftID(), true)
	deadline = time.Now().Add(10 * time.Second)
	for {
		got = metricstest.Samples(t, nodes[lead].Collector())
		if got[`jaco_raft_members{status="unreachable",suffrage="voter"}`] == 1 &&
			got[`jaco_raft_members{status="reachable",suffrage="voter"}`] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader never counted the cut-off member unreachable: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
