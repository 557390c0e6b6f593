package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

func notifyBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "launch"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHealthNotifyFlag: --health-notify makes a notify check with the
// interval, retries and start period flags, and no timeout.
func TestHealthNotifyFlag(t *testing.T) {
	spec := &api.ServiceSpec{Name: "proc"}
	applyFlags(t, spec, true, "--bundle", notifyBundle(t), "--health-notify",
		"--health-interval", "2s", "--health-retries", "4", "--health-start-period", "1m")
	h := spec.GetHealth()
	if h.GetNotify() == nil || h.GetInterval().AsDuration() != 2*time.Second || h.GetRetries() != 4 ||
		h.GetStartPeriod().AsDuration() != time.Minute || h.GetTimeout() != nil {
		t.Fatalf("health %v, want notify every 2s, 4 retries, start period 1m, no timeout", h)
	}

	// On update, --health-interval alone keeps the notify check.
	applyFlags(t, spec, false, "--health-interval", "500ms")
	if h := spec.GetHealth(); h.GetNotify() == nil || h.GetInterval().AsDuration() != 500*time.Millisecond {
		t.Fatalf("after update: health %v, want notify every 500ms", h)
	}
	// Another test replaces it.
	applyFlags(t, spec, false, "--health-cmd", "true")
	if spec.GetHealth().GetCommand() == nil {
		t.Fatalf("after --health-cmd: health %v, want a command check", spec.GetHealth())
	}
}

// TestHealthNotifyBadCombos: --health-notify beside another test or a
// timeout, or for an image, is a usage error (exit 2) before anything is
// dialled.
func TestHealthNotifyBadCombos(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	bundle := notifyBundle(t)
	create := func(args ...string) []string {
		return append([]string{"service", "create", "--name", "proc"}, args...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{create("--bundle", bundle, "--health-notify", "--health-cmd", "true"), "--health-notify cannot be combined with --health-cmd"},
		{create("--bundle", bundle, "--health-notify", "--health-tcp", "80"), "--health-notify cannot be combined with --health-tcp"},
		{create("--bundle", bundle, "--health-notify", "--health-http", "80/"), "--health-notify cannot be combined with --health-http"},
		{create("--bundle", bundle, "--health-notify", "--health-timeout", "1s"), "--health-notify cannot be combined with --health-timeout"},
		{create("--health-notify", "busybox"), "--health-notify is for hook bundles"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--data-dir", t.TempDir(), "--timeout", "1s"}, tc.args...), strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.HasPrefix(stderr.String(), "error: usage: ") || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("jaco %s: exit %d, stderr %q; want 2 and a usage error holding %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want)
		}
	}
}
