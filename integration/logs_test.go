package integration

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCrashLoopLogs: `service logs` of a crash-looping service shows why
// it crashed, from replicas that already ended, each line prefixed
// NAME.SLOT@NODE; --tail, --since and --timestamps narrow and stamp it.
func TestCrashLoopLogs(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	bundle := writeBundle(t, out, `echo "boom: bad config in attempt $JACO_REPLICA_ID"; exit 3`)
	wantOK(t, m.jaco("service", "create", "-d", "--name", "crash", "--replicas", "1", "--restart-delay", "200ms",
		"-e", "OUT="+out, "--bundle", bundle))

	// Every attempt of slot 1 ended; the logs of at least three of them are
	// still there to read.
	line := regexp.MustCompile(`(?m)^crash\.1@(w1|w2) \| boom: bad config in attempt (\S+)$`)
	var logs string
	eventually(t, 60*time.Second, func() error {
		logs = wantOK(t, m.jaco("service", "logs", "crash")).stdout
		if n := len(line.FindAllString(logs, -1)); n < 3 {
			return fmt.Errorf("service logs show %d ended attempts, want at least 3:\n%s", n, logs)
		}
		return nil
	})
	if !strings.Contains(logs, "crash.1@") || !strings.Contains(logs, " | replica of crash in slot 1 says hello") {
		t.Fatalf("each attempt should show all its lines:\n%s", logs)
	}

	// A replica being started may be caught between its lines: ask again
	// until every replica shown has ended (its last line is its crash or
	// the hook shim's note of its exit code).
	eventually(t, 20*time.Second, func() error {
		tail := strings.Split(strings.TrimSpace(wantOK(t, m.jaco("service", "logs", "--tail", "1", "crash")).stdout), "\n")
		for _, l := range tail {
			if !line.MatchString(l) && !strings.Contains(l, "launch exited with code 3") {
				return fmt.Errorf("--tail 1 line %q is no replica's last line", l)
			}
		}
		if len(tail) < 3 {
			return fmt.Errorf("--tail 1 gave %d lines, want one for each of at least 3 replicas", len(tail))
		}
		return nil
	})

	stamped := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z crash\.1@w\d \| `)
	for _, l := range strings.Split(strings.TrimSpace(wantOK(t, m.jaco("service", "logs", "-t", "crash")).stdout), "\n") {
		if !stamped.MatchString(l) {
			t.Fatalf("--timestamps line %q lacks its time", l)
		}
	}

	if got := wantOK(t, m.jaco("service", "logs", "--since", "1h", "crash")).stdout; !line.MatchString(got) {
		t.Fatalf("--since 1h left out recent lines:\n%s", got)
	}
	later := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	if got := wantOK(t, m.jaco("service", "logs", "--since", later, "crash")).stdout; got != "" {
		t.Fatalf("--since an hour ahead printed lines:\n%s", got)
	}
	if r := m.jaco("service", "logs", "--since", "yesterday", "crash"); r.code != 2 {
		t.Fatalf("--since yesterday: exit %d, want 2 (usage)\n%s", r.code, r.stderr)
	}
}
