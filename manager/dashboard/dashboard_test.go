package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/access"
	"github.com/jaco-project/jaco/internal/testclock"
	"github.com/jaco-project/jaco/manager/events"
	"github.com/jaco-project/jaco/manager/state/store"
)

const goodToken = "JACO1-the-operator-token"

// fakeManager is a Source over a real store and event log, without raft.
type fakeManager struct {
	st      *store.Store
	log     *events.Log
	members []*api.Member
	leader  string
}

func (f *fakeManager) LocalRead(context.Context, any) error  { return nil }
func (f *fakeManager) View(fn func(tx store.ReadTx))         { f.st.View(fn) }
func (f *fakeManager) Members() ([]*api.Member, string)      { return f.members, f.leader }
func (f *fakeManager) ClusterID() string                     { return "c0ffee0123456789" }
func (f *fakeManager) NodeID() string                        { return "n1" }
func (f *fakeManager) RaftTerm() uint64                      { return 3 }
func (f *fakeManager) RaftIndexes() (commit, applied uint64) { return 42, 41 }
func (f *fakeManager) QuorumLost() bool                      { return false }
func (f *fakeManager) EventLog() *events.Log                 { return f.log }
func (f *fakeManager) apply(t *testing.T, objs ...*api.StoreAction) {
	t.Helper()
	for _, a := range objs {
		a.Kind = api.StoreAction_KIND_CREATE
	}
	if err := f.st.Apply(f.st.AppliedIndex()+1, &api.InternalRaftRequest{Actions: objs}); err != nil {
		t.Fatal(err)
	}
}

func newFakeManager(t *testing.T) *fakeManager {
	st := store.New(nil)
	t.Cleanup(st.Close)
	log := events.NewLog(100, time.Hour, nil)
	t.Cleanup(log.Close)
	return &fakeManager{st: st, log: log, leader: "n1", members: []*api.Member{
		{NodeId: "n1", Leader: true, Status: api.MemberStatus_MEMBER_STATUS_READY, Suffrage: api.Suffrage_SUFFRAGE_VOTER},
	}}
}

type testDashboard struct {
	srv   *Server
	http  *httptest.Server
	clock *testclock.Clock
}

func newTestDashboard(t *testing.T, src Source, srcErr error) *testDashboard {
	clock := testclock.New(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	s := New(Config{
		Source:             func() (Source, error) { return src, srcErr },
		OperatorTokenValid: func(tok string) bool { return tok == goodToken },
		Now:                clock.Now,
	})
	h := httptest.NewServer(s.Handler())
	t.Cleanup(h.Close)
	return &testDashboard{srv: s, http: h, clock: clock}
}

// noRedirect keeps the answer to a one-time login for the test to read.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (d *testDashboard) login(t *testing.T, token string) *http.Response {
	t.Helper()
	resp, err := http.PostForm(d.http.URL+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (d *testDashboard) get(t *testing.T, path string, cookie *http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func sessionOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("no session cookie in the answer (status %d)", resp.StatusCode)
	return nil
}

func TestLoginRefusesBadTokenWithoutCookie(t *testing.T) {
	d := newTestDashboard(t, newFakeManager(t), nil)
	for _, tok := range []string{"", "JACO1-wrong"} {
		resp := d.login(t, tok)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("login with %q: status %d, want 401", tok, resp.StatusCode)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("login with %q set cookies %v", tok, resp.Cookies())
		}
	}
	if got := len(d.srv.sessions.live); got != 0 {
		t.Errorf("%d sessions after refused logins, want none", got)
	}
}

func TestLoginSetsSessionCookie(t *testing.T) {
	d := newTestDashboard(t, newFakeManager(t), nil)
	if resp := d.get(t, "/api/state", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("state without a session: status %d, want 401", resp.StatusCode)
	}
	resp := d.login(t, goodToken)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: status %d", resp.StatusCode)
	}
	c := sessionOf(t, resp)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
	}
	if resp := d.get(t, "/api/state", c); resp.StatusCode != http.StatusOK {
		t.Fatalf("state with the session: status %d", resp.StatusCode)
	}
}

func TestExpiredOrUnknownSessionRefused(t *testing.T) {
	d := newTestDashboard(t, newFakeManager(t), nil)
	c := sessionOf(t, d.login(t, goodToken))
	unknown := &http.Cookie{Name: sessionCookie, Value: "made-up"}
	if resp := d.get(t, "/api/state", unknown); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown session: status %d, want 401", resp.StatusCode)
	}
	d.clock.Advance(SessionLifetime)
	if resp := d.get(t, "/api/state", c); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired session: status %d, want 401", resp.StatusCode)
	}
}

func TestOneTimeLoginWorksOnce(t *testing.T) {
	d := newTestDashboard(t, newFakeManager(t), nil)
	code, _ := d.srv.sessions.issueOnce()
	resp := d.get(t, "/login?once="+code, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("first use: status %d, Location %q; want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp := d.get(t, "/api/state", sessionOf(t, resp)); resp.StatusCode != http.StatusOK {
		t.Fatalf("state with the session the link opened: status %d", resp.StatusCode)
	}
	again := d.get(t, "/login?once="+code, nil)
	if again.StatusCode != http.StatusUnauthorized || len(again.Cookies()) != 0 {
		t.Fatalf("second use: status %d, cookies %v; want 401 and none", again.StatusCode, again.Cookies())
	}
	late, _ := d.srv.sessions.issueOnce()
	d.clock.Advance(OnceLifetime)
	if resp := d.get(t, "/login?once="+late, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired link: status %d, want 401", resp.StatusCode)
	}
}

func TestNoManagerSaysWhy(t *testing.T) {
	d := newTestDashboard(t, nil, access.NotServed(access.Worker))
	resp := d.login(t, goodToken)
	if resp.StatusCode != http.StatusServiceUnavailable || len(resp.Cookies()) != 0 {
		t.Fatalf("login on a worker: status %d, cookies %v; want 503 and none", resp.StatusCode, resp.Cookies())
	}
	code, _ := d.srv.sessions.issueOnce()
	c := sessionOf(t, d.get(t, "/login?once="+code, nil))
	state := d.get(t, "/api/state", c)
	var body apiError
	if err := json.NewDecoder(state.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if state.StatusCode != http.StatusServiceUnavailable || body.Reason != "not_a_manager" {
		t.Fatalf("state on a worker: status %d, %+v; want 503 not_a_manager", state.StatusCode, body)
	}
}

func TestPageHeadersAndHostGuard(t *testing.T) {
	d := newTestDashboard(t, newFakeManager(t), nil)
	resp := d.get(t, "/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("page: status %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	req, _ := http.NewRequest(http.MethodGet, d.http.URL+"/", nil)
	req.Host = "attacker.example:80"
	rebound, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rebound.Body.Close()
	if rebound.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("request for another host name: status %d, want 421", rebound.StatusCode)
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:0": true, "localhost:9000": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if err := CheckAddr(addr); (err == nil) != ok {
			t.Errorf("CheckAddr(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}

func TestEventStreamDeliversEvents(t *testing.T) {
	f := newFakeManager(t)
	f.log.Append(&api.Event{Time: timestamppb.Now(), Type: "service", Action: "create", Name: "before"})
	d := newTestDashboard(t, f, nil)
	c := sessionOf(t, d.login(t, goodToken))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.http.URL+"/api/events", nil)
	req.AddCookie(c)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	// next returns the data of the next event of kind.
	next := func(kind string) string {
		t.Helper()
		for lines.Scan() {
			if lines.Text() == "event: "+kind && lines.Scan() {
				return strings.TrimPrefix(lines.Text(), "data: ")
			}
		}
		t.Fatalf("stream ended before an %q event: %v", kind, lines.Err())
		return ""
	}
	next("hello")
	if data := next("events"); !strings.Contains(data, `"name":"before"`) {
		t.Fatalf("replayed events %s, want the one held", data)
	}
	f.log.Append(&api.Event{Time: timestamppb.Now(), Type: "task", Action: "state", Name: "web.1", From: "pending", To: "running"})
	var batch []Event
	if err := json.Unmarshal([]byte(next("events")), &batch); err != nil {
		t.Fatal(err)
	}
	if len(batch) != 1 || batch[0].Name != "web.1" || batch[0].To != "running" {
		t.Fatalf("live events %+v, want web.1 pending → running", batch)
	}
}
