package orchestrator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/metrics"
)

// orchestratorMetrics count what the orchestrator committed while this
// manager led. Drains and updates in progress are in the store, and
// reported from it (package manager).
type orchestratorMetrics struct {
	restarts prometheus.Counter
}

func newOrchestratorMetrics() orchestratorMetrics {
	return orchestratorMetrics{
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: "orchestrator",
			Name: "restarts_total", Help: "Replicas the restart policy replaced after they ended (committed)."}),
	}
}

// committed counts a batch once it has committed: a batch refused for a
// conflict is planned again, and counting at planning would count twice.
func (m orchestratorMetrics) committed(batch []*op) {
	for _, o := range batch {
		if t, ok := o.obj.(*api.Task); ok && o.kind == opCreate && restartAttempt(t) {
			m.restarts.Inc()
		}
	}
}

// Collector is the orchestrator's metrics, for a registry.
func (o *Orchestrator) Collector() prometheus.Collector { return o.metrics.restarts }
