package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestDebugServesProfiles: --debug-addr serves the profile index until
// stopped, and an address that cannot be bound is refused at once.
func TestDebugServesProfiles(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	addr, stop, err := serveDebug("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET /debug/pprof/ = %d, body without the goroutine profile", resp.StatusCode)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Error("the profiles are still served after stop")
	}
	if _, _, err := serveDebug("127.0.0.1:-1", log); err == nil || !strings.Contains(err.Error(), "--debug-addr") {
		t.Errorf("a bad address gave %v, want an error naming --debug-addr", err)
	}
}
