package store

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/internal/metrics"
)

var objectsDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "store", "objects"),
	"Objects in this manager's store, by kind (the store's table names: node, service, task, ...).",
	[]string{"kind"}, nil)

// Collector is the store's metrics, for a registry: the objects it holds
// by kind, read at scrape time from the published state, whose tables
// know their length.
func (s *Store) Collector() prometheus.Collector { return storeCollector{s} }

type storeCollector struct{ s *Store }

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- objectsDesc }

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.s.db.Load()
	for _, t := range tables {
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(v.Len(t.name)), t.name)
	}
}
