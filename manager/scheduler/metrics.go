package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/internal/metrics"
)

// schedulerMetrics count what the scheduler decided and committed while
// this manager led.
type schedulerMetrics struct {
	placements prometheus.Counter
	decide     prometheus.Histogram
}

func newSchedulerMetrics() schedulerMetrics {
	return schedulerMetrics{
		placements: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: "scheduler",
			Name: "placements_total", Help: "Replicas this manager's scheduler assigned to a node (committed)."}),
		// From 10 µs (one replica on a small cluster) to 10 s.
		decide: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "scheduler",
			Name: "decision_duration_seconds", Help: "Time the scheduler spent choosing nodes for one batch of pending replicas (the commit excluded).",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 11)}),
	}
}

// record counts a committed batch.
func (m schedulerMetrics) record(stats BatchStats) {
	m.placements.Add(float64(stats.Assigned))
	m.decide.Observe(stats.Decide.Seconds())
}

// Collector is the scheduler's metrics, for a registry.
func (s *Scheduler) Collector() prometheus.Collector {
	return metrics.Collectors{s.metrics.placements, s.metrics.decide}
}
