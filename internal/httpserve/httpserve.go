// Package httpserve runs the daemon's HTTP endpoints (metrics, the
// dashboard, profiles) the one way: bound before the daemon goes on, so a
// bad address stops it at start; served on a goroutine until Stop.
package httpserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts of every endpoint. No write timeout: the dashboard's event
// streams and a CPU profile write for as long as they last.
const (
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes the keep-alive connections of closed tabs and
	// gone scrapers.
	idleTimeout = 2 * time.Minute
	// stopGrace is how long Stop waits for requests in progress.
	stopGrace = 5 * time.Second
)

// Server is one endpoint being served.
type Server struct {
	lis net.Listener
	srv *http.Server
	// cancel ends the requests in progress, streams above all, which
	// http.Server.Shutdown would wait for forever.
	cancel context.CancelFunc
	done   chan struct{}
}

// Start binds addr and serves h on it until Stop. name says what it
// serves in the warning of a server that fails while serving.
func Start(addr, name string, h http.Handler, log *slog.Logger) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{lis: lis, cancel: cancel, done: make(chan struct{}), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn(name+" server stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// Stop ends the requests in progress, waits a few seconds at most for
// them to return, and closes the listener.
func (s *Server) Stop() {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
