package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// decodeView writes v as `inspect` does and reads it back as a script
// would.
func decodeView(t *testing.T, v any) map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := writeJSON(&out, v); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	return m
}

// The shape every command prints: snake_case keys, enums as words,
// 64-bit numbers as numbers, durations and times as people write them,
// bytes base64, and every field present.
func TestProtoViewShape(t *testing.T) {
	started := time.Date(2026, 11, 25, 3, 4, 5, 6000000, time.UTC)
	svc := &api.Service{
		Id:          "s1",
		SpecVersion: 1 << 60,
		Spec: &api.ServiceSpec{
			Name: "web", Replicas: 2, Mode: api.ServiceMode_SERVICE_MODE_REPLICATED,
			Env:    []string{"A=1"},
			Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("#!/bin/sh\n")}},
			Update: &api.UpdatePolicy{Parallelism: 1, Delay: durationpb.New(5 * time.Second), MaxFailureRatio: 0.25,
				FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK},
			Health: &api.HealthCheck{Test: &api.HealthCheck_Http{Http: &api.HTTPCheck{Port: 80, Path: "/"}}},
		},
		UpdateStatus: &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_PAUSED, StartedAt: timestamppb.New(started), Message: "web.1 failed"},
	}
	m := decodeView(t, protoView(svc))
	spec := m["spec"].(map[string]any)
	us := m["update_status"].(map[string]any)
	upd := spec["update"].(map[string]any)
	health := spec["health"].(map[string]any)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"replicas", spec["replicas"], json.Number("2")},
		{"spec_version (beyond 2^53, exact)", m["spec_version"], json.Number("1152921504606846976")},
		{"mode", spec["mode"], "replicated"},
		{"update_status.state", us["state"], "paused"},
		{"update_status.started_at", us["started_at"], "2026-11-25T03:04:05.006Z"},
		{"update_status.completed_at (unset)", us["completed_at"], nil},
		{"update.delay", upd["delay"], "5s"},
		{"update.monitor (unset)", upd["monitor"], nil},
		{"update.failure_action", upd["failure_action"], "rollback"},
		{"update.order (unset enum)", upd["order"], "unspecified"},
		{"update.max_failure_ratio", upd["max_failure_ratio"], json.Number("0.25")},
		{"bundle file", spec["bundle"].(map[string]any)["files"].(map[string]any)["launch"], "IyEvYmluL3NoCg=="},
		{"image (unset string)", spec["image"], ""},
		{"previous_spec (unset message)", m["previous_spec"], nil},
		{"meta (unset message)", m["meta"], nil},
		{"health.command (other oneof member)", health["command"], nil},
		{"health.http.port", health["http"].(map[string]any)["port"], json.Number("80")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if cmd, ok := spec["command"].([]any); !ok || len(cmd) != 0 {
		t.Errorf("command (empty list) = %#v, want []", spec["command"])
	}
	if _, camel := m["updateStatus"]; camel {
		t.Error("camelCase key updateStatus present")
	}
}

// Keys come in the .proto's order, so inspect reads top-down as it.
func TestProtoViewKeepsFieldOrder(t *testing.T) {
	var out bytes.Buffer
	if err := writeJSON(&out, protoView(&api.Service{Id: "s1"})); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	last := -1
	for _, k := range []string{`"id"`, `"meta"`, `"spec"`, `"spec_version"`, `"previous_spec"`, `"update_status"`} {
		i := strings.Index(s, k)
		if i < last {
			t.Fatalf("%s out of order in %s", k, s)
		}
		last = i
	}
}

func TestEnumWord(t *testing.T) {
	for _, c := range []struct {
		got  any
		want any
	}{
		{enumWord(api.TaskState_TASK_STATE_RUNNING.Descriptor(), 5), "running"},
		{enumWord(api.NodeStatusState(0).Descriptor(), api.NodeStatusState_NODE_STATUS_STATE_READY.Number()), "ready"},
		{enumWord(api.UpdateState(0).Descriptor(), api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED.Number()), "rollback_paused"},
		{enumWord(api.RestartCondition(0).Descriptor(), api.RestartCondition_RESTART_CONDITION_ON_FAILURE.Number()), "on_failure"},
		{enumWord(api.TaskState(0).Descriptor(), 999), int64(999)},
	} {
		if c.got != c.want {
			t.Errorf("got %#v, want %#v", c.got, c.want)
		}
	}
}
