package node

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// noRedirect keeps a one-time login's answer for the test to read.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestDashboardLoginNeedsTheDashboard(t *testing.T) {
	dir := t.TempDir()
	startNode(t, dir)
	c := localClient(t, dir)
	if _, err := c.Cluster.Init(ctxT(t), &api.InitClusterRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Node.DashboardLogin(ctxT(t), &api.DashboardLoginRequest{})
	if reason.Of(err) != reason.DashboardOff {
		t.Fatalf("DashboardLogin without --dashboard-addr: %v, want dashboard_off", err)
	}
}

// The dashboard shows the manager the node runs once it has one, and
// signs in with what the gRPC paths accept: the operator token, or a link
// asked for on the local socket.
func TestDashboardServesTheManager(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNodeWith(t, Config{DataDir: dir, DashboardAddr: "127.0.0.1:0"})
	base := n.dashboardSrv.URL()
	c := localClient(t, dir)
	if _, err := c.Node.DashboardLogin(ctxT(t), &api.DashboardLoginRequest{}); reason.Of(err) != reason.ClusterUninitialized {
		t.Fatalf("DashboardLogin before init: %v, want cluster_uninitialized", err)
	}
	resp, err := c.Cluster.Init(ctxT(t), &api.InitClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}

	for tok, want := range map[string]int{resp.OperatorToken: http.StatusOK, resp.OperatorToken + "x": http.StatusUnauthorized, "": http.StatusUnauthorized} {
		r, err := http.PostForm(base+"/login", url.Values{"token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("sign-in with token %.12q…: status %d, want %d", tok, r.StatusCode, want)
		}
	}

	link, err := c.Node.DashboardLogin(ctxT(t), &api.DashboardLoginRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if link.Address != base || !strings.HasPrefix(link.Url, base+"/login?once=") {
		t.Fatalf("DashboardLogin = %v, want a link to %s", link, base)
	}
	r, err := noRedirect.Get(link.Url)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	cookies := r.Cookies()
	if r.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login link: status %d, cookies %v; want 303 and a session", r.StatusCode, cookies)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/state", nil)
	req.AddCookie(cookies[0])
	state, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Body.Close()
	var body struct {
		ServedBy string `json:"served_by"`
		Raft     struct {
			LeaderKnown bool `json:"leader_known"`
		} `json:"raft"`
	}
	if err := json.NewDecoder(state.Body).Decode(&body); err != nil || state.StatusCode != http.StatusOK {
		t.Fatalf("state: status %d, %v", state.StatusCode, err)
	}
	if body.ServedBy != "node-under-test" || !body.Raft.LeaderKnown {
		t.Fatalf("state served by %q, leader known %v; want this node, leading", body.ServedBy, body.Raft.LeaderKnown)
	}
}
