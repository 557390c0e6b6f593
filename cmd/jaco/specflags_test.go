package main

import (
	"testing"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

func TestParsePublish(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *api.PortConfig
	}{
		{"8080:80", &api.PortConfig{PublishedPort: 8080, TargetPort: 80}},
		{"53:53/udp", &api.PortConfig{Protocol: "udp", PublishedPort: 53, TargetPort: 53}},
		{"80", nil},
		{"x:80", nil},
		{"70000:80", nil},
	} {
		got, err := parsePublish(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parsePublish(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.PublishedPort != tc.want.PublishedPort || got.TargetPort != tc.want.TargetPort || got.Protocol != tc.want.Protocol {
			t.Errorf("parsePublish(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestParseBytes: sizes read as docker's --memory reads them, in powers
// of 1024.
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"512": 512, "64K": 64 << 10, "64m": 64 << 20, "64MB": 64 << 20, "1G": 1 << 30,
		"1.5G": 3 << 29, "1GiB": 1 << 30, "512 MB": 512 << 20, "2b": 2,
	} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "M", "1X", "1.5.5G", "ten", "1e30", "NaN", "64MBB"} {
		if n, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, n)
		}
	}
}

func TestParseMount(t *testing.T) {
	for in, want := range map[string]*api.Mount{
		"/a:/b":                                                     {Source: "/a", Target: "/b"},
		"/a:/b:ro":                                                  {Source: "/a", Target: "/b", Readonly: true},
		"type=bind,source=/a,target=/b":                             {Source: "/a", Target: "/b"},
		"type=bind,source=/a,target=/b,readonly":                    {Source: "/a", Target: "/b", Readonly: true},
		"src=/a,dst=/b,ro":                                          {Source: "/a", Target: "/b", Readonly: true},
		"source=/a,destination=/b,readonly=true":                    {Source: "/a", Target: "/b", Readonly: true},
		"type=bind,src=/a,target=/b,readonly=false":                 {Source: "/a", Target: "/b"},
		"Type=bind,Source=/a,Target=/b,RO=1":                        {Source: "/a", Target: "/b", Readonly: true},
		"target=/b,source=/a":                                       {Source: "/a", Target: "/b"},
		"type=bind,src=/a,dst=/b,bind-create-host-path":             {Source: "/a", Target: "/b", CreateHostPath: true},
		"src=/a,dst=/b,bind-create-host-path=false":                 {Source: "/a", Target: "/b"},
		"type=tmpfs,target=/t":                                      {Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/t"},
		"type=tmpfs,dst=/t,tmpfs-size=64m,tmpfs-mode=1777":          {Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/t", TmpfsSizeBytes: 64 << 20, TmpfsMode: 0o1777},
		"type=tmpfs,destination=/t,tmpfs-size=1.5G,tmpfs-mode=0700": {Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/t", TmpfsSizeBytes: 3 << 29, TmpfsMode: 0o700},
		"type=tmpfs,target=/t,readonly":                             {Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/t", Readonly: true},
	} {
		got, err := parseMount(in)
		if err != nil || !proto.Equal(got, want) {
			t.Errorf("parseMount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{
		"/a", "/a:/b:rw", "/a:/b:ro:x", ":/b", "/a:",
		"type=volume,source=v", "type=npipe,source=v,target=/b", "type=tmpfs,source=/a,target=/b", "type=tmpfs",
		"type=tmpfs,target=/t,bind-create-host-path", "type=tmpfs,target=/t,tmpfs-size=lots", "type=tmpfs,target=/t,tmpfs-size=-1",
		"type=tmpfs,target=/t,tmpfs-mode=999", "type=tmpfs,target=/t,tmpfs-mode=17777", "type=tmpfs,target=/t,tmpfs-mode=rwx",
		"type=bind,source=/a,target=/b,tmpfs-size=1m", "type=bind,source=/a,target=/b,tmpfs-mode=700",
		"type=bind,source=/a,target=/b,bind-create-host-path=maybe",
		"type=bind,source=/a,target=/b,bind-propagation=shared", "type=bind,source=/a,target=/b,size=1",
		"type=bind,source=/a", "type=bind,target=/b", "source=/a,target=/b,readonly=maybe",
	} {
		if got, err := parseMount(in); err == nil {
			t.Errorf("parseMount(%q) = %v, want an error", in, got)
		}
	}
}

// TestUpdateAppliesOnlyGivenFlags: `service update` must not reset what
// the operator did not mention to the flags' defaults.
func TestUpdateAppliesOnlyGivenFlags(t *testing.T) {
	var f specFlags
	cmd := &cobra.Command{}
	f.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--replicas", "7", "--constraint", "node.labels.zone==a"}); err != nil {
		t.Fatal(err)
	}
	spec := &api.ServiceSpec{Name: "web", Image: "img", Replicas: 3, Env: []string{"A=1"},
		Restart: &api.RestartPolicy{Condition: api.RestartCondition_RESTART_CONDITION_NONE}}
	if err := f.apply(cmd, spec, false); err != nil {
		t.Fatal(err)
	}
	if spec.Replicas != 7 || len(spec.Placement.GetConstraints()) != 1 {
		t.Fatalf("given flags not applied: %v", spec)
	}
	if len(spec.Env) != 1 || spec.Restart.Condition != api.RestartCondition_RESTART_CONDITION_NONE || spec.StopGracePeriod != nil || spec.Health != nil {
		t.Fatalf("flags not given changed the spec: %v", spec)
	}
}
