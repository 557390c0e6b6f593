package node

import (
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/metrics"
)

// Metrics (docs/design.md, "Metrics"): with Config.MetricsAddr set the
// daemon serves its own metrics (Go runtime, process, gRPC calls, its
// certificate), and those of the manager and the agent while it runs
// them. The parts count whether served or not; only the gRPC calls are
// timed just when served, since that costs every call.

// newGRPCMetrics returns the gRPC server metrics, nil when metrics are off.
func newGRPCMetrics(on bool) *grpcprom.ServerMetrics {
	if !on {
		return nil
	}
	return grpcprom.NewServerMetrics(
		grpcprom.WithServerCounterOptions(grpcprom.WithNamespace(metrics.Namespace)),
		// From 100 µs (a local read) to about 30 s (a write that waits for
		// a quorum, a long join).
		grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramNamespace(metrics.Namespace),
			grpcprom.WithHistogramBuckets(prometheus.ExponentialBuckets(0.0001, 3, 12))))
}

// grpcInterceptors are the server options that count and time calls;
// none when metrics are off. They come first, so they see calls the
// authorization refuses too.
func (n *Node) grpcInterceptors() (unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) {
	if n.grpcMetrics == nil {
		return nil, nil
	}
	return []grpc.UnaryServerInterceptor{n.grpcMetrics.UnaryServerInterceptor()},
		[]grpc.StreamServerInterceptor{n.grpcMetrics.StreamServerInterceptor()}
}

// serveMetrics starts the metrics endpoint when one is configured. Called
// once the gRPC servers exist, so every method is listed from the first
// scrape.
func (n *Node) serveMetrics() error {
	if n.cfg.MetricsAddr == "" {
		return nil
	}
	reg := prometheus.NewRegistry()
	for _, srv := range []*grpc.Server{n.unixSrv, n.tcpSrv} {
		n.grpcMetrics.InitializeMetrics(srv)
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		n.grpcMetrics,
		certExpiry{n},
		roleParts{n},
	)
	srv, err := metrics.Listen(n.cfg.MetricsAddr, reg, n.log)
	if err != nil {
		return err
	}
	n.metricsSrv = srv
	return nil
}

var certExpiryDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "node", "certificate_expiry_seconds"),
	"Seconds until this node's certificate expires (negative once it has); absent before the node has one. The node renews it at two thirds of its lifetime.",
	nil, nil)

// certExpiry reads the node certificate at scrape time: renewal replaces
// the file, and a read of a few kilobytes per scrape costs nothing.
type certExpiry struct{ n *Node }

func (c certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

func (c certExpiry) Collect(ch chan<- prometheus.Metric) {
	if !c.n.initialized() {
		return
	}
	_, certPEM, _, err := ca.LoadNodeFiles(c.n.cfg.nodeDir())
	if err != nil {
		return
	}
	_, notAfter, err := ca.CertValidity(certPEM)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(certExpiryDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, time.Until(notAfter).Seconds())
}

// roleParts collects the metrics of the manager and the agent this daemon
// runs at scrape time: both come and go with its role (init, join,
// promotion, demotion, unlock). It describes nothing ahead, so the
// registry checks their metrics as it gathers them rather than at
// registration.
type roleParts struct{ n *Node }

func (r roleParts) Describe(chan<- *prometheus.Desc) {}

func (r roleParts) Collect(ch chan<- prometheus.Metric) {
	if m := r.n.Manager(); m != nil {
		m.Collector().Collect(ch)
	}
	if a := r.n.agent.Load(); a != nil {
		a.Collector().Collect(ch)
	}
}
