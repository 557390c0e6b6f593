package dispatcher

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/internal/metrics"
)

// dispatcherMetrics count what the dispatcher saw while this manager led.
type dispatcherMetrics struct {
	missedHeartbeats prometheus.Counter
	statusBatches    prometheus.Histogram
}

func newDispatcherMetrics() dispatcherMetrics {
	return dispatcherMetrics{
		missedHeartbeats: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: "dispatcher",
			Name: "missed_heartbeats_total", Help: "Nodes marked down because they missed their heartbeats for the grace period."}),
		statusBatches: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "dispatcher",
			Name: "status_updates_per_batch", Help: "Replica status reports written together in one batch (its count is the batches, its sum the reports).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8)}),
	}
}

var sessionsDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "dispatcher", "sessions"),
	"Agent sessions open on this manager's dispatcher (0 unless it leads).", nil, nil)

// Collector is the dispatcher's metrics, for a registry.
func (s *Server) Collector() prometheus.Collector {
	return metrics.Collectors{s.metrics.missedHeartbeats, s.metrics.statusBatches, sessionCount{s}}
}

type sessionCount struct{ s *Server }

func (c sessionCount) Describe(ch chan<- *prometheus.Desc) { ch <- sessionsDesc }

func (c sessionCount) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	n := 0
	if c.s.term != nil {
		n = len(c.s.term.sessions)
	}
	c.s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n))
}
