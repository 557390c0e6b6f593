package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// enumName is a protobuf enum value's name (TASK_STATE_RUNNING,
// NODE_ROLE_MANAGER): logs say "running" and "manager" instead.
var enumName = regexp.MustCompile(`\b(TASK|NODE|NODE_STATUS|DRAIN|UPDATE|SERVICE)_(STATE|ROLE|AVAILABILITY|MODE)_[A-Z_]+\b`)

// TestDaemonLogJSON (docs/adr/0033-logs.md): with --log-format json every line
// jacod writes is a JSON object with time, level and msg, no key twice,
// no enum value by its protobuf name — through an init, a service whose
// replica runs, and the refusal a second jacod on the same data dir exits
// with.
func TestDaemonLogJSON(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m1", "--log-format", "json")
	m.initQuiet()
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "-e", "OUT="+out, "--bundle", bundle))
	eventually(t, 30*time.Second, func() error { _, err := m.runningReplicas("web", 1); return err })

	second := run(jacodBin, testEnv(), "--log-format", "json", "--data-dir", m.dir,
		"--listen-addr", "127.0.0.1:0", "--node-name", "m1")
	if second.code != 1 {
		t.Fatalf("second jacod on the data dir: exit %d, want 1; stderr:\n%s", second.code, second.stderr)
	}
	if !strings.Contains(second.stderr, `"reason":"data_dir_in_use"`) {
		t.Errorf("second jacod's refusal is not a record with reason data_dir_in_use:\n%s", second.stderr)
	}
	m.stop()

	var lines int
	for _, text := range []string{m.log(), second.stderr} {
		for line := range strings.Lines(text) {
			if strings.HasPrefix(line, "=== integration:") {
				continue // the harness's own marker between starts
			}
			lines++
			if err := checkLogRecord([]byte(line)); err != nil {
				t.Errorf("%v: %s", err, line)
			}
		}
	}
	if lines < 5 {
		t.Errorf("only %d log lines; the test saw too little to check", lines)
	}
}

// checkLogRecord requires line to be one JSON object with time, level and
// msg, no top-level key twice, and no protobuf enum name in its values.
func checkLogRecord(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object (%v)", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("bad JSON: %w", err)
		}
		key := tok.(string) // an object's keys are strings
		if seen[key] {
			return fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("bad JSON value of %q: %w", key, err)
		}
		if enumName.Match(v) {
			return fmt.Errorf("%s holds an enum's protobuf name: %s", key, v)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("bad JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value on the line")
	}
	for _, k := range []string{"time", "level", "msg"} {
		if !seen[k] {
			return fmt.Errorf("no %q key", k)
		}
	}
	return nil
}
