package dashboard

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openStream signs in to the dashboard at base and opens its event
// stream, read up to the hello event.
func openStream(t *testing.T, base string) io.ReadCloser {
	t.Helper()
	resp, err := http.PostForm(base+"/login", map[string][]string{"token": {goodToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := sessionOf(t, resp)
	req, _ := http.NewRequest(http.MethodGet, base+"/api/events", nil)
	req.AddCookie(c)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stream.Body).ReadString('\n')
	if err != nil || line != "event: hello\n" {
		t.Fatalf("stream began with %q, %v; want the hello event", line, err)
	}
	return stream.Body
}

// waitEOF fails t unless body ends within a few seconds.
func waitEOF(t *testing.T, body io.ReadCloser, what string) {
	t.Helper()
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, body)
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		body.Close()
		t.Fatalf("the event stream did not end after %s", what)
	}
}

// Stop ends open event streams rather than waiting for the browsers to
// go: a daemon stopping must not hang on a dashboard tab left open.
func TestStopEndsEventStreams(t *testing.T) {
	f := newFakeManager(t)
	srv, err := Listen(Config{
		Addr:               "127.0.0.1:0",
		Source:             func() (Source, error) { return f, nil },
		OperatorTokenValid: func(tok string) bool { return tok == goodToken },
	})
	if err != nil {
		t.Fatal(err)
	}
	body := openStream(t, srv.URL())
	defer body.Close()
	stopped := make(chan struct{})
	go func() {
		srv.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return with an event stream open")
	}
	waitEOF(t, body, "Stop")
}

// A manager that stops closes its event log: the stream ends, and the
// page's EventSource reconnects to whatever the daemon runs next.
func TestManagerStopEndsEventStream(t *testing.T) {
	f := newFakeManager(t)
	d := newTestDashboard(t, f, nil)
	body := openStream(t, d.http.URL)
	defer body.Close()
	f.log.Close()
	waitEOF(t, body, "the event log closed")
}

func TestListenRefusesNonLoopback(t *testing.T) {
	_, err := Listen(Config{Addr: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Listen on 0.0.0.0: %v, want a refusal naming loopback", err)
	}
}
