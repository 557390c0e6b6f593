package integration

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jaco-project/jaco/internal/testenv"
)

// dashboardLine is the log line naming the bound dashboard address.
var dashboardLine = regexp.MustCompile(`msg="serving dashboard" .*dashboard_addr=(\S+)`)

// artifactsEnv names a directory where tests leave files for people to
// look at after a CI run (screenshots); unset, they go to the test's
// temporary directory, and the test logs where.
const artifactsEnv = "JACO_TEST_ARTIFACTS"

// TestDashboardInBrowser drives the dashboard of a real manager in
// headless Chromium: sign in with the operator token through the form,
// see the node and a running service, then create a service with the CLI
// and see it appear without a reload (the page follows the event
// stream); sign out, and in again with the one-time link of `jaco
// dashboard`.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	browser := chromiumPath()
	if browser == "" {
		testenv.SkipOrFail(t, "chromium (Debian package chromium) is not installed")
	}
	m := startDaemon(t, "m1", "--dashboard-addr", "127.0.0.1:0")
	addr := dashboardLine.FindStringSubmatch(m.log())
	if addr == nil {
		t.Fatalf("jacod did not log its dashboard address")
	}
	// Before init there is no store to show, nor a token to check.
	resp, err := http.PostForm("http://"+addr[1]+"/login", map[string][]string{"token": {"JACO1-x"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"reason":"cluster_uninitialized"`) {
		t.Fatalf("sign-in before init: %d %s, want 503 cluster_uninitialized", resp.StatusCode, body)
	}
	token := m.initQuiet()
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 600")
	wantOK(t, m.jaco("service", "create", "--name", "web", "--replicas", "1", "-e", "OUT="+out, "--bundle", bundle))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.Headless,
		// Root in a CI container has no user namespace to sandbox in.
		chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	url := "http://" + addr[1] + "/"
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login-form button")),
		chromedp.WaitVisible(chromedp.CSS("#board")),
	); err != nil {
		t.Fatalf("sign in at %s: %v", url, err)
	}
	nodes := waitText(t, ctx, "#nodes tbody", "m1")
	if !strings.Contains(nodes, "manager") || !strings.Contains(nodes, "leader") {
		t.Errorf("nodes table %q: want m1 shown as the leading manager", nodes)
	}
	waitText(t, ctx, "#services tbody", "web")
	waitText(t, ctx, "#services tbody", "1 running")

	// While the page is open: a new service must show up without a reload.
	wantOK(t, m.jaco("service", "create", "-d", "--name", "late", "--replicas", "2", "-e", "OUT="+out, "--bundle", bundle))
	waitText(t, ctx, "#services tbody", "late")
	waitText(t, ctx, "#events tbody", "late")

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatalf("save screenshot: %v", err)
	}
	t.Logf("dashboard screenshot: %s", path)

	// Signed out, the browser signs in again with the link `jaco
	// dashboard` prints to the local socket's user; the link works once.
	link := strings.TrimSpace(wantOK(t, m.jaco("dashboard", "--quiet")).stdout)
	if !strings.HasPrefix(link, "http://"+addr[1]+"/login?once=") {
		t.Fatalf("jaco dashboard printed %q, want a login link to %s", link, addr[1])
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#logout")),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS("#board")),
	); err != nil {
		t.Fatalf("sign out, then in with %s: %v", link, err)
	}
	waitText(t, ctx, "#services tbody", "late")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login link used again: status %d, cookies %v; want 401 and none", resp.StatusCode, resp.Cookies())
	}
}

// waitText waits, within ctx, until the text of the element sel holds
// want, and returns the text.
func waitText(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	// The page itself checks at each change of the DOM: no sleep here.
	// The poll's own timeout is ctx's.
	js := `(() => { const e = document.querySelector(` + jsString(sel) + `); return e !== null && e.innerText.includes(` + jsString(want) + `); })()`
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(0), chromedp.WithPollingMutation()))
	// What the page shows, read on a context of its own: ctx may be the
	// one that ran out.
	read, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	text, terr := chromedp.Run(read, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s never showed %q: %v; it shows %q (%v)", sel, want, err, text, terr)
	}
	return text
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// chromiumPath is the Chromium the browser tests drive, "" when none is
// installed.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
