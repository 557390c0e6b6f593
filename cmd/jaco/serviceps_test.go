package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

func TestReplicaError(t *testing.T) {
	for _, c := range []struct {
		s    *api.TaskStatus
		want string
	}{
		{&api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING, Message: "started"}, ""},
		{&api.TaskStatus{State: api.TaskState_TASK_STATE_FAILED, Reason: "exit_code", Message: "launch exited 1", ExitCode: 1}, "launch exited 1"},
		{&api.TaskStatus{State: api.TaskState_TASK_STATE_REJECTED, Reason: "prepare_failed"}, "prepare_failed"},
		{&api.TaskStatus{State: api.TaskState_TASK_STATE_FAILED, ExitCode: 3}, "exit code 3"},
		{&api.TaskStatus{State: api.TaskState_TASK_STATE_PENDING, Reason: "no_suitable_node", Message: "no node has 4 CPUs free"}, "no node has 4 CPUs free"},
		{&api.TaskStatus{State: api.TaskState_TASK_STATE_SHUTDOWN, Message: "replaced"}, ""},
	} {
		if got := replicaError(c.s); got != c.want {
			t.Errorf("replicaError(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// ERROR is cut to 40 characters ending in "…" unless --no-trunc; JSON
// holds it whole beside the keys scripts already read.
func TestPsErrorColumn(t *testing.T) {
	long := "launch exited 1: cannot open /etc/app/config.yaml: no such file or directory"
	views := []taskView{{ID: "t1", Name: "web.1", Node: "n1", Desired: "running", State: "failed: exit_code", Since: time.Now(), Error: long}}

	var out bytes.Buffer
	if err := printReplicas(&out, views, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasSuffix(lines[0], "ERROR") {
		t.Fatalf("header %q has no ERROR column", lines[0])
	}
	want := string([]rune(long)[:39]) + "…"
	if !strings.HasSuffix(lines[1], want) || strings.Contains(lines[1], long) {
		t.Fatalf("row %q: want the error cut to %q", lines[1], want)
	}

	out.Reset()
	if err := printReplicas(&out, views, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), long) {
		t.Fatalf("--no-trunc printed %q, want the whole error", out.String())
	}

	out.Reset()
	if _, err := writeAs(&out, "json", views); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "node", "desired", "state", "since", "message", "error"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("ps --format json has no %q: %v", k, got[0])
		}
	}
	if got[0]["error"] != long {
		t.Errorf("ps --format json error = %v, want it whole", got[0]["error"])
	}
}

func TestCut(t *testing.T) {
	if got := cut("short", 40); got != "short" {
		t.Errorf("cut(short) = %q", got)
	}
	if got := cut("héllo wörld", 5); got != "héll…" {
		t.Errorf("cut = %q, want héll…", got)
	}
}
