package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/launchdir"
)

// TestLaunchBadInput: calls refused before anything is dialled (the data
// dir is empty, so a call that dialled would fail unavailable instead).
func TestLaunchBadInput(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "web"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "web", "service"), []byte("replicas = 2\nreplica = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	example := "../../examples/launch"
	for _, c := range []badInput{
		usage("give one configuration directory", "launch"),
		usage("give one configuration directory", "launch", "a", "b"),
		usage("--resume takes at most the configuration directory", "launch", "--resume", "abc", "a", "b"),
		usage(`launch name "Shop_1"`, "launch", example, "-L", "Shop_1"),
		usage(`-D "1x=y": the key is`, "launch", example, "-D", "1x=y"),
		usage("-D a-b and -D a_b both give JACO_META_A_B", "launch", example, "-D", "a-b=1", "-D", "a_b=2"),
		usage("--resume keeps the namespace's name and metadata", "launch", "--resume", "abc", "-L", "x"),
		usage("accepts 1 arg(s), received 0", "launch", "inspect"),
		usage(`--filter state="asleep": want one of`, "launch", "ls", "--filter", "state=asleep"),
		{args: []string{"launch", filepath.Join(bad, "missing")}, code: 1, want: "error: launch configuration: open "},
		{args: []string{"launch", bad}, code: 2, want: `error: invalid_launch_config: launch configuration ` + bad +
			` is invalid: web/service:2: unknown key "replica"; web/launch: missing`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--data-dir", t.TempDir(), "--timeout", "1s"}, c.args...), strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("jaco %s: exit %d, stdout %q, stderr %q; want %d and one line holding %q",
				strings.Join(c.args, " "), code, stdout.String(), stderr.String(), c.code, c.want)
		}
	}
}

// TestNamespaceState: the state rule of `jaco launch ls`.
func TestNamespaceState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	svc := func(id, ns string, replicas uint64, extra map[string]string) *api.Service {
		labels := map[string]string{launchdir.LabelID: ns, launchdir.LabelName: "n-" + ns, launchdir.LabelService: id}
		for k, v := range extra {
			labels[k] = v
		}
		return &api.Service{Id: id, SpecVersion: 1, Meta: &api.Meta{UpdatedAt: timestamppb.New(now.Add(-time.Hour))},
			Spec: &api.ServiceSpec{Name: id, Replicas: replicas, Labels: labels}}
	}
	task := func(svc string, desired, state api.TaskState, exit int32, ago time.Duration) *api.Task {
		return &api.Task{ServiceId: svc, SpecVersion: 1, DesiredState: desired,
			Status: &api.TaskStatus{State: state, ExitCode: exit, Timestamp: timestamppb.New(now.Add(-ago))}}
	}
	const (
		run      = api.TaskState_TASK_STATE_RUNNING
		pending  = api.TaskState_TASK_STATE_PENDING
		complete = api.TaskState_TASK_STATE_COMPLETE
		failed   = api.TaskState_TASK_STATE_FAILED
		shutdown = api.TaskState_TASK_STATE_SHUTDOWN
	)
	for _, tc := range []struct {
		name  string
		svcs  []*api.Service
		tasks []*api.Task
		want  string
	}{
		{"all running", []*api.Service{svc("a", "1", 1, nil), svc("b", "1", 2, nil)},
			[]*api.Task{task("a", run, run, 0, time.Second), task("b", run, run, 0, time.Second), task("b", run, run, 0, time.Second)}, launchRunning},
		{"one short", []*api.Service{svc("a", "1", 1, nil), svc("b", "1", 2, nil)},
			[]*api.Task{task("a", run, run, 0, time.Second), task("b", run, run, 0, time.Second), task("b", run, pending, 0, time.Second)}, launchScheduling},
		{"restarting is scheduling", []*api.Service{svc("a", "1", 1, nil)},
			[]*api.Task{task("a", shutdown, failed, 1, 2*time.Second), task("a", run, pending, 0, time.Second)}, launchScheduling},
		{"given up", []*api.Service{svc("a", "1", 1, nil), svc("b", "1", 1, nil)},
			[]*api.Task{task("a", run, run, 0, time.Second), task("b", complete, failed, 1, time.Second)}, launchFailed},
		{"ended well", []*api.Service{svc("a", "1", 1, nil)},
			[]*api.Task{task("a", complete, complete, 0, time.Second)}, launchRunning},
		{"stale", []*api.Service{svc("a", "1", 1, nil)},
			[]*api.Task{task("a", run, pending, 0, 10*time.Minute)}, launchStale},
		{"a service missing", []*api.Service{svc("a", "1", 1, map[string]string{launchdir.LabelServices: "a,b"})},
			[]*api.Task{task("a", run, run, 0, time.Second)}, launchScheduling},
		{"stopped", []*api.Service{svc("a", "1", 0, map[string]string{labelStopped: "x"})}, nil, launchStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := namespaceViews(append(tc.svcs, &api.Service{Id: "other", Spec: &api.ServiceSpec{Name: "other"}}), tc.tasks, now, 5*time.Minute)
			if len(views) != 1 || views[0].State != tc.want || views[0].Name != "n-1" {
				t.Fatalf("views %+v, want one namespace n-1 %s", views, tc.want)
			}
		})
	}
	two := namespaceViews([]*api.Service{svc("a", "1", 1, nil), svc("b", "2", 1, nil)}, nil, now, time.Hour)
	if len(two) != 2 || two[0].ID != "1" || two[1].ID != "2" {
		t.Errorf("two namespaces: %+v", two)
	}
	if _, err := pickNamespace(two, "n-2"); err != nil {
		t.Errorf("pick by name: %v", err)
	}
	if _, err := pickNamespace(two, "3"); err == nil || !strings.Contains(err.Error(), "no launch") {
		t.Errorf("pick of nothing: %v", err)
	}
}

// TestStopAndStart: stop scales to nothing, start restores the
// configuration's replicas (a global service: its constraint).
func TestStopAndStart(t *testing.T) {
	spec := &api.ServiceSpec{Replicas: 3, Labels: map[string]string{launchdir.LabelReplicas: "2"}}
	stopSpec(spec, "now")
	if spec.Replicas != 0 || spec.Labels[labelStopped] != "now" {
		t.Errorf("stopped: %v", spec)
	}
	startSpec(spec)
	if _, ok := spec.Labels[labelStopped]; ok || spec.Replicas != 2 {
		t.Errorf("started: %v", spec)
	}
	global := &api.ServiceSpec{Mode: api.ServiceMode_SERVICE_MODE_GLOBAL, Placement: &api.Placement{Constraints: []string{"node.role==worker"}}}
	stopSpec(global, "now")
	stopSpec(global, "later")
	if len(global.Placement.Constraints) != 2 || global.Labels[labelStopped] != "now" {
		t.Errorf("global stopped twice: %v", global)
	}
	startSpec(global)
	if len(global.Placement.Constraints) != 1 {
		t.Errorf("global started: %v", global)
	}
}
