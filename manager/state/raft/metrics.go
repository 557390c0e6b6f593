package raft

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/raft/v3"

	"github.com/jaco-project/jaco/internal/metrics"
)

// nodeMetrics are the member's counters and histograms, moved where the
// events happen; what can be read at any time (term, leadership, lag,
// members) is read at scrape time instead (Collector).
type nodeMetrics struct {
	leaderChanges      prometheus.Counter
	proposalsCommitted prometheus.Counter
	proposalsFailed    prometheus.Counter
	walSync            prometheus.Histogram
	snapshotDuration   prometheus.Histogram
	snapshotBytes      prometheus.Gauge
	readyEntries       prometheus.Histogram
}

func newNodeMetrics() *nodeMetrics {
	const sub = "raft"
	return &nodeMetrics{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "leader_changes_total", Help: "Times this member saw a new leader."}),
		proposalsCommitted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "proposals_committed_total", Help: "Write batches proposed by this member that committed (the store may still have refused them)."}),
		proposalsFailed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "proposals_failed_total", Help: "Write batches proposed by this member that did not commit, or whose outcome it cannot know (leadership lost, stopped, timed out)."}),
		// From 100 µs: an SSD's fsync; to 10 s: a disk an operator must
		// replace.
		walSync: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "wal_fsync_duration_seconds", Help: "Time to append a Ready's entries and hard state to the WAL and fsync it.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 17)}),
		snapshotDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "snapshot_duration_seconds", Help: "Time to encode (paced, rests included), seal and write a snapshot of the store.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		snapshotBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "snapshot_size_bytes", Help: "Size of the newest snapshot this member wrote."}),
		// Each Ready's entries are applied in one version of the store, so
		// the tree nodes they copy are shared by this many writes
		// (docs/adr/0051).
		readyEntries: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: sub,
			Name: "ready_committed_entries", Help: "Committed entries applied together, per Ready that had any.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
	}
}

// countProposal counts the outcome of a proposal this member made. A
// store's refusal is an outcome of a committed entry; the raft package's
// own failures mean it did not commit, or may not have.
func (m *nodeMetrics) countProposal(err error) {
	if err != nil && (errors.Is(err, ErrNotLeader) || errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrStopped)) {
		m.proposalsFailed.Inc()
		return
	}
	m.proposalsCommitted.Inc()
}

var (
	termDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "term"),
		"The raft term this member is in.", nil, nil)
	isLeaderDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "is_leader"),
		"1 when this member leads, 0 otherwise.", nil, nil)
	hasLeaderDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "has_leader"),
		"1 when this member knows a leader, 0 otherwise: a quorum lost, or an election under way.", nil, nil)
	commitDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "commit_index"),
		"The highest log index this member knows committed.", nil, nil)
	appliedDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "applied_index"),
		"The highest log index applied to this member's store.", nil, nil)
	applyLagDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "apply_lag_entries"),
		"Entries known committed and not yet applied to the store.", nil, nil)
	membersDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "raft", "members"),
		"Raft members by suffrage (voter, learner) and, as the leader sees them, status (reachable, unreachable); unknown on the other members.",
		[]string{"suffrage", "status"}, nil)
)

// Collector is the member's metrics, for a registry.
func (n *Node) Collector() prometheus.Collector {
	m := n.metrics
	return metrics.Collectors{m.leaderChanges, m.proposalsCommitted, m.proposalsFailed,
		m.walSync, m.snapshotDuration, m.snapshotBytes, m.readyEntries, nodeStatus{n}}
}

// nodeStatus reads the member's status at scrape time.
type nodeStatus struct{ n *Node }

func (s nodeStatus) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{termDesc, isLeaderDesc, hasLeaderDesc, commitDesc, appliedDesc, applyLagDesc, membersDesc} {
		ch <- d
	}
}

func (s nodeStatus) Collect(ch chan<- prometheus.Metric) {
	// Status answers from raft's own goroutine, and an empty Status once
	// the member stopped.
	st := s.n.rn.Status()
	applied := s.n.applied.Load()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(termDesc, float64(st.Term))
	gauge(isLeaderDesc, boolValue(st.RaftState == raft.StateLeader))
	gauge(hasLeaderDesc, boolValue(st.Lead != raft.None))
	gauge(commitDesc, float64(st.Commit))
	gauge(appliedDesc, float64(applied))
	gauge(applyLagDesc, float64(st.Commit-min(applied, st.Commit)))
	for key, count := range memberCounts(st) {
		gauge(membersDesc, float64(count), key.suffrage, key.status)
	}
}

type memberKey struct{ suffrage, status string }

// memberCounts counts the members of st's configuration. Only a leader
// tracks its followers' progress: it counts a member reachable when it
// heard from it within an election timeout (raft's RecentActive, which
// raft resets each election timeout under CheckQuorum).
func memberCounts(st raft.Status) map[memberKey]int {
	counts := make(map[memberKey]int)
	status := func(id uint64) string {
		if st.RaftState != raft.StateLeader {
			return "unknown"
		}
		if id == st.ID {
			return "reachable"
		}
		if pr, ok := st.Progress[id]; ok && pr.RecentActive {
			return "reachable"
		}
		return "unreachable"
	}
	for id := range st.Config.Voters.IDs() {
		counts[memberKey{"voter", status(id)}]++
	}
	for id := range st.Config.Learners {
		counts[memberKey{"learner", status(id)}]++
	}
	return counts
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
