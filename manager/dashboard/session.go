package dashboard

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/jaco-project/jaco/api/reason"
)

// How long a sign-in lasts: a working day, after which the operator
// types the token again (or runs `jaco dashboard`). A one-time login URL
// is printed to a terminal to be opened at once; a minute is plenty, and
// little for a URL that leaks through a shared screen or shell history.
const (
	SessionLifetime  = 8 * time.Hour
	OnceLifetime     = time.Minute
	sessionCookie    = "jaco_dashboard_session"
	maxLoginFormSize = 4 << 10
)

// sessions holds the signed-in browsers and the unused one-time logins,
// in memory only: a restarted daemon signs everyone out, which costs a
// login and keeps no secret on disk.
type sessions struct {
	now func() time.Time

	mu sync.Mutex
	// live maps a session cookie's value to its expiry; once, a one-time
	// login code to its expiry.
	live map[string]time.Time
	once map[string]time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, live: map[string]time.Time{}, once: map[string]time.Time{}}
}

// secret is 32 random bytes, URL-safe: as hard to guess as the operator
// token it stands in for.
func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start opens a session and returns its cookie value and expiry.
func (s *sessions) start() (id string, expires time.Time) { return s.issue(s.live, SessionLifetime) }

// issueOnce makes a one-time login code.
func (s *sessions) issueOnce() (code string, expires time.Time) { return s.issue(s.once, OnceLifetime) }

// issue adds a new secret to m, valid for lifetime.
func (s *sessions) issue(m map[string]time.Time, lifetime time.Duration) (string, time.Time) {
	key, expires := secret(), s.now().Add(lifetime)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune()
	m[key] = expires
	return key, expires
}

// valid reports whether id names a session that has not expired.
func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.live[id]
	return ok && s.now().Before(exp)
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, id)
}

// redeemOnce uses up code: true the first time, before it expires.
func (s *sessions) redeemOnce(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.once[code]
	delete(s.once, code)
	return ok && s.now().Before(exp)
}

// prune forgets what expired, so the maps hold only what may still be
// used. Called with mu held.
func (s *sessions) prune() {
	now := s.now()
	for _, m := range []map[string]time.Time{s.live, s.once} {
		for k, exp := range m {
			if !now.Before(exp) {
				delete(m, k)
			}
		}
	}
}

func (s *Server) setSessionCookie(w http.ResponseWriter) {
	id, expires := s.sessions.start()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", Expires: expires,
		// Scripts never read it, and no other site's page sends it.
		// Not Secure: the dashboard is plain HTTP on loopback only.
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// login signs a browser in with the operator token from the login form.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginFormSize)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, reason.InvalidSpec, "the login form could not be read: %v", err)
		return
	}
	if _, err := s.cfg.Source(); err != nil {
		// Without a manager there is no cluster to check the token
		// against: say so rather than call a good token wrong.
		word := reason.Of(err)
		if word == "" {
			word = reason.NotAManager
		}
		writeError(w, http.StatusServiceUnavailable, word, "%s", reason.Sentence(err))
		return
	}
	if !s.cfg.OperatorTokenValid(r.PostForm.Get("token")) {
		s.cfg.Logger.Warn("dashboard login refused: operator token is not valid", "remote", r.RemoteAddr)
		writeError(w, http.StatusUnauthorized, reason.PermissionDenied, "operator token is not valid for this cluster")
		return
	}
	s.setSessionCookie(w)
	s.cfg.Logger.Info("dashboard sign-in", "with", "operator token", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, struct{}{})
}

// loginOnce signs a browser in with a one-time code `jaco dashboard`
// printed, then sends it to the page.
func (s *Server) loginOnce(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("once")
	if code == "" || !s.sessions.redeemOnce(code) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("permission_denied: this login link is unknown, used or expired; run 'jaco dashboard' for a new one, or sign in with the operator token at /\n"))
		return
	}
	s.setSessionCookie(w)
	s.cfg.Logger.Info("dashboard sign-in", "with", "one-time link", "remote", r.RemoteAddr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, struct{}{})
}

// signedIn serves next only to a browser with a live session.
func (s *Server) signedIn(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil || !s.sessions.valid(c.Value) {
			writeError(w, http.StatusUnauthorized, reason.PermissionDenied, "sign in with the operator token, or open the link 'jaco dashboard' prints")
			return
		}
		next(w, r)
	})
}
