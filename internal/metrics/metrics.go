// Package metrics holds what a daemon's Prometheus metrics have in
// common: the name prefix, a collector made of others, and the HTTP
// endpoint that serves them (docs/design.md, "Metrics").
//
// Each part of the daemon defines its own metrics beside the code that
// moves them, and hands them over as a prometheus.Collector; the daemon
// registers them. Nothing registers into client_golang's global registry:
// a test process holds several daemons, and each must report its own.
package metrics

import "github.com/prometheus/client_golang/prometheus"

// Namespace prefixes every metric jaco defines.
const Namespace = "jaco"

// Collectors is a prometheus.Collector made of others, so that a part with
// several metrics hands them over as one.
type Collectors []prometheus.Collector

// Describe implements prometheus.Collector.
func (cs Collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (cs Collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
