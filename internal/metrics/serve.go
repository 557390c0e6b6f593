package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jaco-project/jaco/internal/httpserve"
)

// Path is where the metrics are served.
const Path = "/metrics"

// Listen binds addr, so that a bad address stops the daemon at start, and
// serves g on it as Prometheus text until the server's Stop.
func Listen(addr string, g prometheus.Gatherer, log *slog.Logger) (*httpserve.Server, error) {
	mux := http.NewServeMux()
	// An error gathering one family still serves the others: a scrape
	// that fails whole would hide everything behind one bad collector.
	mux.Handle(Path, promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s, err := httpserve.Start(addr, "metrics", mux, log)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	log.Info("serving metrics", "metrics_addr", s.Addr().String())
	return s, nil
}
