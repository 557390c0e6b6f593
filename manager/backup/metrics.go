package backup

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/internal/metrics"
	"github.com/jaco-project/jaco/manager/state/store"
)

// schedulerMetrics count what this manager's scheduler did while it led.
type schedulerMetrics struct {
	failures prometheus.Counter
}

func newSchedulerMetrics() *schedulerMetrics {
	return &schedulerMetrics{
		failures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Subsystem: "backup",
			Name: "failures_total", Help: "Scheduled backups this manager failed to write while it led."}),
	}
}

var (
	lastSuccessDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "backup", "last_success_timestamp_seconds"),
		"When the last scheduled backup that succeeded was taken, as this manager's store records it (0: none yet).", nil, nil)
	intervalDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "backup", "interval_seconds"),
		"The scheduled backups' interval (0: off).", nil, nil)
)

// Collector is the scheduled backups' metrics, for a registry: this
// manager's failures, and the schedule and last success read from its
// store at scrape time, so every manager reports them.
func (s *Scheduler) Collector() prometheus.Collector {
	return metrics.Collectors{s.metrics.failures, scheduleState{s.store}}
}

type scheduleState struct{ st *store.Store }

func (c scheduleState) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastSuccessDesc
	ch <- intervalDesc
}

func (c scheduleState) Collect(ch chan<- prometheus.Metric) {
	var last, interval float64
	c.st.View(func(tx store.ReadTx) {
		cl := tx.ClusterShared()
		if t := cl.GetLastBackup().GetLastSuccessAt(); t != nil {
			last = float64(t.AsTime().UnixMilli()) / 1000
		}
		interval = cl.GetBackupSchedule().GetInterval().AsDuration().Seconds()
	})
	ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(intervalDesc, prometheus.GaugeValue, interval)
}
