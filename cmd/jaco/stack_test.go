package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// TestStackBadInput: stack commands refuse what they are given before
// dialling (the data dir is empty: a dial would fail unavailable).
func TestStackBadInput(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	build := write("build.yaml", "services:\n  web:\n    image: x\n    build: .\n    privileged: true\n    security_opt: [a]\n")
	noImage := write("noimage.yaml", "services:\n  web:\n    build: .\n")
	badYAML := write("bad.yaml", "services:\n  web:\n    image: [\n")
	noSecret := write("nosecret.yaml", "services:\n  web:\n    image: x\n    secrets: [pw]\nsecrets:\n  pw:\n    file: ./missing.txt\n")
	badRestart := write("restart.yaml", "services:\n  web:\n    image: x\n    deploy:\n      restart_policy: {condition: sometimes}\n")
	for _, c := range []badInput{
		usage("give the compose file with -c FILE", "stack", "deploy", "shop"),
		usage(`stack name "Shop"`, "stack", "deploy", "-c", build, "Shop"),
		usage("accepts 1 arg(s), received 0", "stack", "deploy", "-c", build),
		usage(`unknown command "lss" for "jaco stack"`, "stack", "lss"),
		usage("accepts 1 arg(s), received 0", "stack", "ps"),
		usage("accepts 1 arg(s), received 0", "stack", "rm"),
		usage(`--filter "bogus=1": no key "bogus"`, "stack", "ls", "--filter", "bogus=1"),
		// Every key jaco cannot honour, by name, with the reason word.
		usage("error: unsupported_compose_key: services.web.privileged, services.web.security_opt: jaco cannot honour", "stack", "deploy", "-c", build, "shop"),
		// build beside image is a warning line, printed with the refusal.
		usage("warning: compose key build (service web): ignored; jaco builds nothing and runs the image given\nerror: unsupported_compose_key", "stack", "deploy", "-c", build, "shop"),
		usage("error: unsupported_compose_key: services.web.build (no image: jaco builds nothing; build the image, push it to a registry (or jaco image load it on every node) and give image)",
			"stack", "deploy", "-c", noImage, "shop"),
		usage("compose files:", "stack", "deploy", "-c", badYAML, "shop"),
		usage(`services.web.deploy.restart_policy.condition: "sometimes"`, "stack", "deploy", "-c", badRestart, "shop"),
		// Files that cannot be read fail (1), still before dialling.
		{args: []string{"stack", "deploy", "-c", filepath.Join(dir, "nope.yaml"), "shop"}, code: 1, want: "nope.yaml: no such file"},
		{args: []string{"stack", "deploy", "-c", noSecret, "shop"}, code: 1, want: "error: shop_pw: open "},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--data-dir", t.TempDir(), "--timeout", "1s"}, c.args...), strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("jaco %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr.String(), c.code, c.want)
		}
	}
}

// TestSameSpec: what the manager adds to a stored spec (reference ids,
// force_update) is no change; anything else is.
func TestSameSpec(t *testing.T) {
	desired := &api.ServiceSpec{Name: "s_web", Image: "x", Env: []string{"A=1"},
		Secrets: []*api.FileReference{{Name: "s_pw", Target: "pw", Mode: 0o400}}}
	stored := proto.Clone(desired).(*api.ServiceSpec)
	stored.Secrets[0].Id = "abc"
	stored.ForceUpdate = 3
	if !sameSpec(stored, desired) {
		t.Error("a stored spec with ids and force_update differs from the file's")
	}
	if desired.Secrets[0].Id != "" || stored.Secrets[0].Id != "abc" {
		t.Error("sameSpec changed its arguments")
	}
	changed := proto.Clone(desired).(*api.ServiceSpec)
	changed.Env = []string{"A=2"}
	if sameSpec(stored, changed) {
		t.Error("a changed variable compares equal")
	}
}

// TestDependencyOrder: dependencies first; removal is the reverse.
func TestDependencyOrder(t *testing.T) {
	specs := []*api.ServiceSpec{
		{Name: "s_a", DependsOn: []string{"s_c"}},
		{Name: "s_b"},
		{Name: "s_c", DependsOn: []string{"s_b", "elsewhere"}},
	}
	var got []string
	for _, s := range dependencyOrder(specs) {
		got = append(got, s.Name)
	}
	if strings.Join(got, " ") != "s_b s_c s_a" {
		t.Errorf("create order %v, want s_b s_c s_a", got)
	}
	svcs := []*api.Service{{Spec: specs[0]}, {Spec: specs[1]}, {Spec: specs[2]}}
	got = nil
	for _, s := range removalOrder(svcs) {
		got = append(got, s.Spec.Name)
	}
	if strings.Join(got, " ") != "s_a s_c s_b" {
		t.Errorf("removal order %v, want s_a s_c s_b", got)
	}
}
