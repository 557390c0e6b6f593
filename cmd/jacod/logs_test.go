package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLogFormat: --log-format json writes one JSON object a line, text
// writes key=value, and a value jacod does not know is a usage error
// (exit 2) before the daemon starts.
func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("hello", "node_id", "n1")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("json line %q: %v", buf.String(), err)
	}
	if rec["msg"] != "hello" || rec["level"] != "INFO" || rec["node_id"] != "n1" || rec["time"] == nil {
		t.Errorf("json record = %v", rec)
	}

	buf.Reset()
	log, err = newLogger(&buf, "text", "debug")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hello", "node_id", "n1")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG msg=hello node_id=n1") {
		t.Errorf("text line = %q", got)
	}

	for _, args := range [][]string{
		{"--log-format", "xml"},
		{"--log-format", "JSON"},
		{"--log-level", "loud"},
	} {
		if code := run(args); code != 2 {
			t.Errorf("jacod %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}
