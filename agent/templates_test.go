package agent

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/spectemplate"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// templatedTask is slot 2 of web with a template in every field that
// takes one.
func templatedTask(id string) *api.Task {
	t := imageTask(id)
	t.Slot = 2
	t.Spec.Env = []string{"SLOT={{.Task.Slot}}", "WHERE={{.Node.Hostname}}/{{.Node.ID}}", "ARCH={{.Node.Platform.Architecture}}", "PLAIN=x"}
	t.Spec.Hostname = "{{.Task.Name}}"
	t.Spec.Labels = map[string]string{"svc": "{{.Service.ID}}"}
	t.Spec.Mounts = []*api.Mount{{Source: "/srv/db-{{.Task.Slot}}", Target: "/data"}}
	t.Spec.Configs = []*api.FileReference{{Name: "app", Id: "cfg-1", Target: "/etc/app-{{.Task.Slot}}.conf"}}
	return t
}

// The runtime gets the spec with its templates expanded for the replica
// on this node; the agent keeps, reports and stores the spec as the
// manager sent it (docs/design.md §9).
func TestRuntimeSeesExpandedSpec(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	a := startAgent(t, testConfig(t.TempDir(), []string{d.addr}, rt))
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))

	sent := templatedTask("t1")
	d.assignFiles(nil, []*api.Config{testConfig1}, sent)
	waitfor.Eventually(t, 10*time.Second, func() error {
		if ok, seen := d.lastIs("t1", running)(); !ok {
			return errors.New(seen)
		}
		return nil
	})

	rep, ok := rt.replica("t1")
	if !ok {
		t.Fatal("the runtime made no controller for t1")
	}
	got := rep.Task.GetSpec()
	arch := spectemplate.Architecture(runtime.GOARCH)
	wantEnv := []string{"SLOT=2", "WHERE=worker-1/node-1", "ARCH=" + arch, "PLAIN=x"}
	if !slices.Equal(got.GetEnv(), wantEnv) || got.GetHostname() != "web.2" || got.GetLabels()["svc"] != "svc" ||
		got.GetMounts()[0].GetSource() != "/srv/db-2" || got.GetConfigs()[0].GetTarget() != "/etc/app-2.conf" {
		t.Fatalf("the runtime saw spec %v; want env %q, hostname web.2, label svc=svc, source /srv/db-2, config target /etc/app-2.conf", got, wantEnv)
	}
	// The files the runtime writes are at the expanded targets.
	if len(rep.Files) != 1 || rep.Files[0].Path != "/etc/app-2.conf" {
		t.Fatalf("replica files %v, want the config at /etc/app-2.conf", rep.Files)
	}

	if kept := a.agent.Replicas(); len(kept) != 1 || !proto.Equal(kept[0].GetSpec(), sent.GetSpec()) {
		t.Fatalf("the agent keeps %v, want the spec as sent %v", kept, sent.GetSpec())
	}
	a.agent.mu.Lock()
	w := a.agent.worker
	a.agent.mu.Unlock()
	stored, err := w.db.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || !proto.Equal(stored[0].GetSpec(), sent.GetSpec()) {
		t.Fatalf("the agent db holds %v, want the spec as sent", stored)
	}
}

// A template the manager would have refused fails the replica at the
// agent with a message naming the field.
func TestBadTemplateRejectsReplica(t *testing.T) {
	d, rt, _ := setup(t)
	task := imageTask("t1")
	task.Spec.Env = []string{"X={{.Node.Foo}}"}
	d.assign(task)
	waitfor.Eventually(t, 10*time.Second, func() error {
		if ok, seen := d.lastIs("t1", rejected)(); !ok {
			return errors.New(seen)
		}
		return nil
	})
	st := d.last("t1")
	if st.GetReason() != ReasonInvalidSpec || !strings.Contains(st.GetMessage(), "template in env X") || !strings.Contains(st.GetMessage(), "Foo") {
		t.Fatalf("status %v, want %s naming env X and .Node.Foo", st, ReasonInvalidSpec)
	}
	if n := rt.count("prepare t1"); n != 0 {
		t.Fatalf("the runtime prepared a replica whose templates failed: %v", rt.callLog())
	}
}
