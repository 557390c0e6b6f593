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
			Mounts: []*api.Mount{{Source: "/src", Target: "/dst"},
				{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/run", TmpfsSizeBytes: 1 << 20, TmpfsMode: 0o1777}},
			Update: &api.UpdatePolicy{Parallelism: 1, Delay: durationpb.New(5 * time.Second)},
			User:   "app", CapAdd: []string{"CAP_NET_ADMIN"}, Sysctls: map[string]string{"net.core.somaxconn": "1024"},
			Ulimits: []*api.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}}, Init: true},
		UpdateStatus: &api.UpdateStatus{State: api.UpdateState_UPDATE_STATE_PAUSED, Message: "web.1 failed"},
	}
	var out bytes.Buffer
	// As service inspect shows it: an unset mount type is a bind mount.
	if err := (&inspectFlags{pretty: true, format: "json"}).write(&out, protoView(withMountTypes(svc))); err != nil {
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
      type: bind
      tmpfs_size_bytes: 0
      tmpfs_mode: 0
      create_host_path: false
      volume_no_copy: false
    - target: /run
      readonly: false
      type: tmpfs
      tmpfs_size_bytes: 1048576
      tmpfs_mode: 1023
      create_host_path: false
      volume_no_copy: false
  update:
    parallelism: 1
    delay: 5s
    order: unspecified
    failure_action: unspecified
    max_failure_ratio: 0
  force_update: 0
  endpoint_mode: unspecified
  user: app
  ulimits:
    - name: nofile
      soft: 1024
      hard: 2048
  cap_add:
    - CAP_NET_ADMIN
  sysctls:
    net.core.somaxconn: 1024
  init: true
  read_only: false
  shm_size_bytes: 0
  max_concurrent: 0
  volume_move: pin
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
