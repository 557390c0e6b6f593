package main

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

// --pretty shows the same view as the JSON, indented, unset fields left
// out, lists as "- " items, values escaped for the terminal.
func TestInspectPretty(t *testing.T) {
	svc := &api.Service{
		Id: "s1", SpecVersion: 3,
		Spec: &api.ServiceSpec{Name: "web\x1b[2J", Replicas: 2, Env: []string{"A=1", "B=2"},
			Mounts: []*api.Mount{{Source: "/src", Target: "/dst"}},
			Update: &api.UpdatePolicy{Parallelism: 1, Delay: durationpb.New(5 * time.Second)}},
		UpdateStatus: &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_PAUSED, Message: "web.1 failed"},
	}
	var out bytes.Buffer
	if err := (&inspectFlags{pretty: true, format: "json"}).write(&out, protoView(svc)); err != nil {
		t.Fatal(err)
	}
	want := `id: s1
spec:
  name: web\x1b[2J
  env:
    - A=1
    - B=2
  replicas: 2
  mode: replicated
  mounts:
    - source: /src
      target: /dst
      readonly: false
  update:
    parallelism: 1
    delay: 5s
    order: unspecified
    failure_action: unspecified
    max_failure_ratio: 0
  force_update: 0
  endpoint_mode: unspecified
spec_version: 3
update_status:
  state: paused
  message: web.1 failed
`
	if got := out.String(); got != want {
		t.Fatalf("--pretty printed\n%s\nwant\n%s", got, want)
	}
}

func TestInspectFlagsCheck(t *testing.T) {
	for _, c := range []struct {
		f  inspectFlags
		ok bool
	}{
		{inspectFlags{format: "json"}, true},
		{inspectFlags{format: "json", pretty: true}, true},
		{inspectFlags{format: "table"}, false},
		{inspectFlags{format: "yaml"}, false},
	} {
		if err := c.f.check(); (err == nil) != c.ok {
			t.Errorf("%+v: check() = %v, want ok=%v", c.f, err, c.ok)
		}
	}
}
