package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// A --format template runs once per listed entry, on its JSON keys, and
// numbers compare and print as numbers.
func TestFormatTemplateOnAList(t *testing.T) {
	views := []serviceView{
		{ID: "s1", Name: "web", Mode: "replicated", Desired: 2, Running: 2},
		{ID: "s2", Name: "db", Mode: "global", Desired: 1 << 60, Running: 0},
	}
	var out bytes.Buffer
	ok, err := writeAs(&out, `{{.id}} {{.name}} {{.desired}}{{if eq .running 2}} all{{end}}`, views)
	if !ok || err != nil {
		t.Fatalf("writeAs: %v, %v", ok, err)
	}
	if got, want := out.String(), "s1 web 2 all\ns2 db 1152921504606846976\n"; got != want {
		t.Fatalf("printed %q, want %q", got, want)
	}
}

// On one object (inspect, status) the template runs once, and reaches
// nested fields and lists.
func TestFormatTemplateOnAnObject(t *testing.T) {
	svc := &api.Service{Id: "s1", Spec: &api.ServiceSpec{Name: "web", Env: []string{"A=1", "B=2"}},
		UpdateStatus: &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_PAUSED}}
	var out bytes.Buffer
	f := inspectFlags{format: `{{.spec.name}} {{.update_status.state}} {{join .spec.env ","}} {{json .spec.command}}`}
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if err := f.write(&out, protoView(svc)); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "web paused A=1,B=2 []\n"; got != want {
		t.Fatalf("printed %q, want %q", got, want)
	}
}

// A misspelt field fails rather than printing "<no value>" into a
// script's input.
func TestFormatTemplateMissingKeyFails(t *testing.T) {
	var out bytes.Buffer
	if _, err := writeAs(&out, `{{.nmae}}`, []serviceView{{ID: "s1"}}); err == nil || !strings.Contains(err.Error(), "nmae") {
		t.Fatalf("writeAs with a misspelt key: %v, printed %q", err, out.String())
	}
}

func TestCheckFormat(t *testing.T) {
	for f, ok := range map[string]bool{
		"table": true, "json": true, "{{.id}}": true, "{{.id}}\t{{.name}}": true,
		"yaml": false, "": false, "{{.id": false, "{{nosuchfunc .id}}": false,
	} {
		if err := checkFormat(f); (err == nil) != ok {
			t.Errorf("checkFormat(%q) = %v, want ok=%v", f, err, ok)
		}
	}
}

// A bad template is a usage mistake: exit 2, before any daemon is asked.
func TestBadTemplateExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"service", "ls", "--format", "{{.id"},
		{"service", "ps", "web", "--format", "{{.id"},
		{"node", "ls", "--format", "yaml"},
		{"node", "inspect", "n1", "--format", "{{end}}"},
		{"service", "inspect", "web", "--pretty", "--format", "{{.id}}"},
		{"cluster", "status", "--format", "{{"},
		{"status", "--format", "{{.x"},
	} {
		var stdout, stderr bytes.Buffer
		args = append([]string{"--data-dir", t.TempDir()}, args...)
		if code := run(args, nil, &stdout, &stderr); code != 2 || !strings.HasPrefix(stderr.String(), "error: usage: ") {
			t.Errorf("jaco %s: exit %d, stderr %q; want 2 and a usage error", strings.Join(args, " "), code, stderr.String())
		}
	}
}
