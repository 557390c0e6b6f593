package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/jaco-project/jaco/internal/httpserve"
)

// serveDebug serves Go's profiles (/debug/pprof/) on addr, reporting the
// address bound, until stop is called.
// Off by default: profiles show the daemon's internals, so an operator
// turns it on for a while and binds it to loopback (docs/operator-guide.md,
// "Profiling"). The listener is bound before it returns, so a bad address
// stops the daemon at start rather than later.
func serveDebug(addr string, log *slog.Logger) (bound string, stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s, err := httpserve.Start(addr, "debug", mux, log)
	if err != nil {
		return "", nil, fmt.Errorf("--debug-addr: %w", err)
	}
	log.Info("serving profiles", "debug_addr", s.Addr().String())
	return s.Addr().String(), s.Stop, nil
}
