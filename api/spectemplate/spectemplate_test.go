package spectemplate

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

var testNode = Node{ID: "nodeid7", Hostname: "worker-3", Platform: Platform{OS: "linux", Architecture: "x86_64"}}

// replicaTask is slot 3 of service web (id svcid1) with spec.
func replicaTask(spec *api.ServiceSpec) *api.Task {
	return &api.Task{Id: "taskid9", ServiceId: "svcid1", ServiceName: "web", Slot: 3, NodeId: testNode.ID, Spec: spec}
}

func expand(t *testing.T, spec *api.ServiceSpec) *api.ServiceSpec {
	t.Helper()
	out, err := Expand(spec, NewContext(replicaTask(spec), testNode))
	if err != nil {
		t.Fatalf("Expand: %v", err)
	}
	return out
}

func TestExpandEveryVariable(t *testing.T) {
	for _, tc := range []struct{ tmpl, want string }{
		{"{{.Service.ID}}", "svcid1"},
		{"{{.Service.Name}}", "web"},
		{"{{.Service.Labels}}", "map[tier:front]"},
		{`{{index .Service.Labels "tier"}}`, "front"},
		{"{{.Service.Labels.tier}}", "front"},
		{"{{.Node.ID}}", "nodeid7"},
		{"{{.Node.Hostname}}", "worker-3"},
		{"{{.Node.Platform.OS}}", "linux"},
		{"{{.Node.Platform.Architecture}}", "x86_64"},
		{"{{.Task.ID}}", "taskid9"},
		// jaco's replica name (api.ReplicaName), not Swarm's web.3.taskid9.
		{"{{.Task.Name}}", "web.3"},
		{"{{.Task.Slot}}", "3"},
		{`{{join "-" .Service.Name .Task.Slot}}`, "web-3"},
		{`{{if eq .Task.Slot "1"}}primary{{else}}secondary{{end}}`, "secondary"},
		{"{{with .Node}}{{.Hostname}}{{end}}", "worker-3"},
		{"{{/* a comment */}}x", "x"},
	} {
		spec := &api.ServiceSpec{Name: "web", Labels: map[string]string{"tier": "front"}, Hostname: tc.tmpl}
		if got := expand(t, spec).GetHostname(); got != tc.want {
			t.Errorf("%s expands to %q, want %q", tc.tmpl, got, tc.want)
		}
	}
}

func TestExpandEveryField(t *testing.T) {
	spec := &api.ServiceSpec{
		Name:     "web",
		Image:    "busybox",
		Command:  []string{"{{.Task.Slot}}"}, // not a templated field
		Env:      []string{"SLOT={{.Task.Slot}}", "PLAIN=x", "NOVALUE", "EQ=a=={{.Node.ID}}"},
		Hostname: "{{.Service.Name}}-{{.Task.Slot}}",
		Labels:   map[string]string{"node": "{{.Node.Hostname}}", "plain": "y"},
		Mounts: []*api.Mount{
			{Source: "/srv/db-{{.Task.Slot}}", Target: "/data"},
			{Source: "/srv/{{.Node.Hostname}}", Target: "/node", Type: api.MountType_MOUNT_TYPE_BIND},
			{Target: "/tmp", Type: api.MountType_MOUNT_TYPE_TMPFS},
		},
		Secrets: []*api.FileReference{{Name: "pw", Target: "pw-{{.Task.Slot}}"}, {Name: "plain"}},
		Configs: []*api.FileReference{{Name: "app", Target: "/etc/app/{{.Task.Name}}.conf"}},
	}
	before := proto.CloneOf(spec)
	out := expand(t, spec)
	if !proto.Equal(spec, before) {
		t.Fatalf("Expand changed its argument: %v", spec)
	}
	want := proto.CloneOf(before)
	want.Env = []string{"SLOT=3", "PLAIN=x", "NOVALUE", "EQ=a==nodeid7"}
	want.Hostname = "web-3"
	want.Labels["node"] = "worker-3"
	want.Mounts[0].Source = "/srv/db-3"
	want.Mounts[1].Source = "/srv/worker-3"
	want.Secrets[0].Target = "pw-3"
	want.Configs[0].Target = "/etc/app/web.3.conf"
	if !proto.Equal(out, want) {
		t.Fatalf("expanded\n%v\nwant\n%v", out, want)
	}
}

// A global service's replica has no slot: .Task.Slot is the node's id (as
// Swarm's), .Task.Name SERVICE.HOSTNAME.
func TestExpandGlobalReplica(t *testing.T) {
	spec := &api.ServiceSpec{Name: "agent", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL, Hostname: "{{.Task.Slot}}/{{.Task.Name}}"}
	task := replicaTask(spec)
	task.Slot, task.ServiceName = 0, "agent"
	out, err := Expand(spec, NewContext(task, testNode))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.GetHostname(), "nodeid7/agent.worker-3"; got != want {
		t.Fatalf("hostname %q, want %q", got, want)
	}
	if err := Check(spec); err != nil {
		t.Fatalf("Check of a global service: %v", err)
	}
}

// Strings without "{{" are left as they are, and a spec with no template
// is returned as it is, with no copy and no allocation: every replica of
// every spec goes through Expand.
func TestExpandFastPath(t *testing.T) {
	spec := &api.ServiceSpec{
		Name: "web", Image: "busybox", Env: []string{"A=b", "C=}}{"}, Hostname: "web-host",
		Labels: map[string]string{"a": "{ {x} }"}, Mounts: []*api.Mount{{Source: "/srv", Target: "/data"}},
		Secrets: []*api.FileReference{{Name: "s", Target: "t"}}, Configs: []*api.FileReference{{Name: "c", Target: "/c"}},
		Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("{{.Node.Foo}}")}},
	}
	ctx := NewContext(replicaTask(spec), testNode)
	out, err := Expand(spec, ctx)
	if err != nil || out != spec {
		t.Fatalf("Expand of a spec without templates = %p, %v; want the spec itself (%p)", out, err, spec)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Expand(spec, ctx); err != nil {
			t.Fatal(err)
		}
		if err := Check(spec); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Expand and Check of a spec without templates allocate %v times", n)
	}
}

func TestCheckRefusesBadTemplates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  *api.ServiceSpec
		field string
		says  string
	}{
		{"unknown field", &api.ServiceSpec{Env: []string{"X={{.Node.Foo}}"}}, "env X", "can't evaluate field Foo"},
		{"unknown top-level", &api.ServiceSpec{Hostname: "{{.Cluster.ID}}"}, "hostname", "can't evaluate field Cluster"},
		{"syntax", &api.ServiceSpec{Hostname: "{{.Node.ID"}, "hostname", "unclosed action"},
		{"missing label", &api.ServiceSpec{Labels: map[string]string{"a": "{{.Service.Labels.nope}}"}}, "label a", `no entry for key "nope"`},
		{"call", &api.ServiceSpec{Labels: map[string]string{"a": "{{call .Node.ID}}"}}, "label a", `function "call" is not offered`},
		{"printf", &api.ServiceSpec{Env: []string{`X={{printf "%999999999d" 1}}`}}, "env X", `function "printf" is not offered`},
		{"print", &api.ServiceSpec{Env: []string{`X={{print .Node.ID}}`}}, "env X", `function "print" is not offered`},
		{"unknown function", &api.ServiceSpec{Env: []string{"X={{env `HOME`}}"}}, "env X", `function "env" not defined`},
		{"range", &api.ServiceSpec{Env: []string{"X={{range .Service.Labels}}x{{end}}"}}, "env X", "range is not offered"},
		{"define", &api.ServiceSpec{Env: []string{`X={{define "a"}}x{{end}}`}}, "env X", "define and block are not offered"},
		{"template", &api.ServiceSpec{Env: []string{`X={{template "a"}}`}}, "env X", "template is not offered"},
		{"wrong type", &api.ServiceSpec{Env: []string{`X={{if eq .Task.Slot 1}}x{{end}}`}}, "env X", "incompatible types"},
		{"mount source", &api.ServiceSpec{Mounts: []*api.Mount{{Source: "/srv/{{.Task.Foo}}", Target: "/data"}}}, "mount source for /data", "can't evaluate field Foo"},
		{"relative after expansion", &api.ServiceSpec{Mounts: []*api.Mount{{Source: "{{.Node.Hostname}}/db", Target: "/data"}}}, "mount source for /data", "not an absolute path"},
		{"secret target", &api.ServiceSpec{Secrets: []*api.FileReference{{Name: "pw", Target: "{{.Bad}}"}}}, "secret pw target", "can't evaluate field Bad"},
		{"config target", &api.ServiceSpec{Configs: []*api.FileReference{{Name: "app", Target: "/{{"}}}, "config app target", "unclosed action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name = "web"
			err := Check(tc.spec)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Check = %v, want an *Error", err)
			}
			if te.Field != tc.field || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "template in "+tc.field+":") {
				t.Fatalf("Check = %q (field %q), want field %q saying %q", err, te.Field, tc.field, tc.says)
			}
		})
	}
}

func TestCheckAccepts(t *testing.T) {
	spec := &api.ServiceSpec{
		Name: "web", Labels: map[string]string{"tier": "front", "me": "{{.Service.Labels.tier}}"},
		Env:      []string{"ARCH={{.Node.Platform.Architecture}}", "OS={{.Node.Platform.OS}}", "N={{len .Service.Labels}}"},
		Hostname: "{{.Service.Name}}-{{.Task.Slot}}",
		Mounts:   []*api.Mount{{Source: "/srv/db-{{.Task.Slot}}", Target: "/data"}},
	}
	if err := Check(spec); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// What templates write is bounded, however often they print or join the
// labels.
func TestExpandBounded(t *testing.T) {
	big := strings.Repeat("x", MaxExpandedBytes/4+1)
	for _, tmpl := range []string{
		strings.Repeat("{{.Service.Labels.big}}", 5),
		`{{$a := join "" .Service.Labels.big .Service.Labels.big .Service.Labels.big}}{{$b := join "" $a $a}}`,
	} {
		spec := &api.ServiceSpec{Name: "web", Labels: map[string]string{"big": big}, Env: []string{"X=" + tmpl}}
		if err := Check(spec); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Check of %.60s... = %v, want ErrTooLarge", tmpl, err)
		}
	}
	spec := &api.ServiceSpec{Name: "web", Labels: map[string]string{"big": big}, Env: []string{"X={{.Service.Labels.big}}"}}
	if err := Check(spec); err != nil {
		t.Fatalf("one copy of a label within the bound: %v", err)
	}
}

func TestPlatform(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"} {
		if got := Architecture(goarch); got != want {
			t.Errorf("Architecture(%s) = %s, want %s", goarch, got, want)
		}
	}
	if p := HostPlatform(); p.OS != runtime.GOOS || p.Architecture != Architecture(runtime.GOARCH) {
		t.Errorf("HostPlatform() = %+v", p)
	}
}
