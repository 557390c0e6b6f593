package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/internal/metrics"
)

// agentMetrics time the steps of a replica's start on this node.
type agentMetrics struct {
	prepare, start *prometheus.HistogramVec
	prepareFailed  *prometheus.CounterVec
}

func newAgentMetrics() *agentMetrics {
	// From 1 ms (a hook bundle's prepare) to about a minute (a large
	// image pulled over a slow link).
	buckets := prometheus.ExponentialBuckets(0.001, 2, 17)
	return &agentMetrics{
		prepare: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "agent",
			Name: "prepare_duration_seconds", Help: "Time to prepare a replica by runtime: pull or load its image and create its container (containerd), or run the bundle's prepare hook (hooks).",
			Buckets: buckets}, []string{"runtime"}),
		start: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "agent",
			Name: "start_duration_seconds", Help: "Time to start a prepared replica by runtime: its network, its process, until the runtime says it runs.",
			Buckets: buckets}, []string{"runtime"}),
		prepareFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: "agent",
			Name: "prepare_failures_total", Help: "Replicas whose prepare failed, by reason (image_pull_denied, image_pull_failed, ...)."},
			[]string{"reason"}),
	}
}

var replicasDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "agent", "replicas"),
	"Replicas this node's agent holds, by the state it last reported.", []string{"state"}, nil)

// Collector is the agent's metrics, for a registry.
func (a *Agent) Collector() prometheus.Collector {
	return metrics.Collectors{a.metrics.prepare, a.metrics.start, a.metrics.prepareFailed, replicaStates{a}}
}

type replicaStates struct{ a *Agent }

func (c replicaStates) Describe(ch chan<- *prometheus.Desc) { ch <- replicasDesc }

// Collect counts the replicas by state without copying them, as every
// scrape does.
func (c replicaStates) Collect(ch chan<- prometheus.Metric) {
	c.a.mu.Lock()
	w := c.a.worker
	c.a.mu.Unlock()
	if w == nil {
		return
	}
	for state, n := range w.states() {
		ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, float64(n), enumword.Of(state))
	}
}

// since is the seconds elapsed since start, for a histogram.
func since(start time.Time) float64 { return time.Since(start).Seconds() }
