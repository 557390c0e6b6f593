// Package dashboard is the read-only web dashboard a manager serves with
// --dashboard-addr (docs/design.md §17, docs/adr/0036-dashboard.md): one
// page, embedded with its script and style, which shows the nodes, the
// services and their replicas, pending replicas, updates in progress,
// raft health and the recent events, read from the manager's own store,
// and follows the event log over server-sent events.
//
// It serves plain HTTP on a loopback address only: the operator token
// typed into its login form must not cross a network in clear, and the
// node certificates (Ed25519) are ones browsers refuse in TLS.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/httpserve"
	"github.com/jaco-project/jaco/manager/events"
	"github.com/jaco-project/jaco/manager/state/store"
)

//go:embed assets
var assets embed.FS

// Source is what the dashboard reads of the manager it runs beside
// (*manager.Manager).
type Source interface {
	// LocalRead is nil when the store may answer a local read (the
	// member has replayed its log), else the refusal (not_ready).
	LocalRead(ctx context.Context, req any) error
	View(fn func(tx store.ReadTx))
	Members() (members []*api.Member, leaderNodeID string)
	ClusterID() string
	NodeID() string
	RaftTerm() uint64
	RaftIndexes() (commit, applied uint64)
	QuorumLost() bool
	EventLog() *events.Log
}

// Config is what a Server needs of its daemon.
type Config struct {
	// Addr is the HOST:PORT to listen on; HOST must be a loopback
	// address or localhost.
	Addr string
	// Source is the manager whose store the pages show, or nil and the
	// refusal (with a reason word: not_a_manager, locked, ...) while the
	// daemon runs none. It is asked on every request: the daemon's
	// manager comes and goes with init, unlock, promotion and demotion.
	Source func() (Source, error)
	// OperatorTokenValid reports whether tok is the cluster's operator
	// token, as the gRPC TCP path checks it.
	OperatorTokenValid func(tok string) bool
	Logger             *slog.Logger
	// Now is the clock of sessions (nil: time.Now).
	Now func() time.Time
}

// Server serves the dashboard until Stop.
type Server struct {
	cfg      Config
	http     *httpserve.Server // nil for a Server that listens nowhere (New)
	sessions *sessions
}

// Listen checks and binds cfg.Addr, so that a bad address stops the
// daemon at start, and serves on it until Stop.
func Listen(cfg Config) (*Server, error) {
	if err := CheckAddr(cfg.Addr); err != nil {
		return nil, err
	}
	s := New(cfg)
	h, err := httpserve.Start(cfg.Addr, "dashboard", s.Handler(), s.cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("dashboard address %s: %w", cfg.Addr, err)
	}
	s.http = h
	s.cfg.Logger.Info("serving dashboard", "dashboard_addr", h.Addr().String())
	return s, nil
}

// New returns a Server that listens nowhere: its Handler serves the
// dashboard (for tests, and for Listen).
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, sessions: newSessions(cfg.Now)}
}

// CheckAddr refuses an address the dashboard may not listen on: one that
// is not HOST:PORT, or whose host is not loopback. The page takes the
// operator token, and plain HTTP beyond the machine would carry it in
// clear.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dashboard address %q: want HOST:PORT: %w", addr, err)
	}
	if !loopbackHost(host) {
		return fmt.Errorf("dashboard address %q: the dashboard serves plain HTTP, so only on a loopback address "+
			"(127.0.0.1:PORT, [::1]:PORT, localhost:PORT); from another machine reach it through an SSH tunnel (docs/adr/0036-dashboard.md)", addr)
	}
	return nil
}

// loopbackHost reports whether host names this machine only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.http.Addr() }

// URL is the dashboard's address as a browser opens it.
func (s *Server) URL() string { return "http://" + s.http.Addr().String() }

// LoginURL makes a one-time login address for the local socket's user
// (`jaco dashboard`): it signs in once, until expires.
func (s *Server) LoginURL() (url string, expires time.Time) {
	code, expires := s.sessions.issueOnce()
	return s.URL() + "/login?once=" + code, expires
}

// Stop ends the event streams and closes the listener.
func (s *Server) Stop() { s.http.Stop() }

// Handler serves the page, its assets, the login and the JSON API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // a constant path: cannot fail
	files := http.FileServerFS(static)
	mux.Handle("GET /{$}", files)
	mux.Handle("GET /app.js", files)
	mux.Handle("GET /style.css", files)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /login", s.loginOnce)
	mux.HandleFunc("POST /logout", s.logout)
	mux.Handle("GET /api/state", s.signedIn(s.state))
	mux.Handle("GET /api/events", s.signedIn(s.events))
	return guard(mux)
}

// guard sets the headers every answer carries and refuses a request
// whose Host is not loopback: a page of another site whose name an
// attacker points at 127.0.0.1 (DNS rebinding) would otherwise be served
// as if it were ours.
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Nothing is loaded from anywhere else, nothing inline runs, and
		// no other site may frame the page.
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		if !loopbackHost(strings.Trim(host, "[]")) {
			writeError(w, http.StatusMisdirectedRequest, reason.PermissionDenied, "the dashboard answers only to a loopback host name")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiError is the body of a refused API call: a stable reason word and a
// sentence, as the CLI prints them.
type apiError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, code int, word, format string, args ...any) {
	writeJSON(w, code, apiError{Reason: word, Message: fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went: nothing to do
}

// source is the manager to read, or writes why there is none (503 with
// the daemon's reason word) and returns nil.
func (s *Server) source(w http.ResponseWriter, r *http.Request) Source {
	src, err := s.cfg.Source()
	if err == nil && src != nil {
		err = src.LocalRead(r.Context(), nil)
	}
	if err != nil || src == nil {
		word := reason.Of(err)
		if word == "" {
			word = reason.NotAManager
		}
		msg := "this daemon runs no manager"
		if err != nil {
			msg = reason.Sentence(err)
		}
		writeError(w, http.StatusServiceUnavailable, word, "%s", msg)
		return nil
	}
	return src
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	src := s.source(w, r)
	if src == nil {
		return
	}
	writeJSON(w, http.StatusOK, ReadState(src))
}
