package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// Server serves a gatherer's metrics as Prometheus text over HTTP.
type Server struct {
	lis  net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr, so that a bad address stops the daemon at start, and
// serves g on it until Stop.
func Listen(addr string, g prometheus.Gatherer, log *slog.Logger) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	// An error gathering one family still serves the others: a scrape
	// that fails whole would hide everything behind one bad collector.
	mux.Handle(Path, promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s := &Server{lis: lis, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "metrics_addr", lis.Addr().String())
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// Stop lets scrapes in progress finish for a few seconds, then closes.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
