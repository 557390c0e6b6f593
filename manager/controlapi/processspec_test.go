package controlapi

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// TestValidateSpecProcessOptions: every option a real image uses passes as
// Docker spells it; a word no runtime could apply is refused invalid_spec,
// naming what is wrong.
func TestValidateSpecProcessOptions(t *testing.T) {
	full := &api.ServiceSpec{
		Name: "db", Image: "img",
		User: "postgres:999", Groups: []string{"audio", "1001"}, Workdir: "/var/lib/db",
		StopSignal: "SIGTERM", Ulimits: []*api.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}, {Name: "core", Soft: -1, Hard: -1}},
		Hostname: "db-{{.Task.Slot}}", CapAdd: []string{"NET_ADMIN", "cap_sys_time"}, CapDrop: []string{"ALL"},
		Sysctls: map[string]string{"net.core.somaxconn": "1024", "kernel.shmmax": "68719476736", "fs.mqueue.msg_max": "20"},
		Init:    true, ReadOnly: true, ExtraHosts: []string{"gateway:198.18.0.1", "v6host:[2001:db8::1]", "other=198.18.0.2"},
		Dns: []string{"198.18.0.53"}, DnsSearch: []string{"svc.local"}, DnsOptions: []string{"ndots:2", "rotate"},
		ShmSizeBytes: 256 << 20,
		Mounts: []*api.Mount{
			{Source: "/srv/data", Target: "/data", CreateHostPath: true},
			{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/run", TmpfsSizeBytes: 64 << 20, TmpfsMode: 0o1777},
		},
	}
	if err := validateSpec(full); err != nil {
		t.Fatalf("validateSpec(every option) = %v, want nil", err)
	}
	bundle := &api.ServiceSpec{Name: "job", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("#!/bin/sh\n")}},
		User: "nobody", Groups: []string{"nogroup"}, Workdir: "/tmp", StopSignal: "TERM", Ulimits: []*api.Ulimit{{Name: "nofile", Soft: 64, Hard: 64}},
		// A bundle gets mounts in a namespace of its own (agent/exec/hooks).
		Mounts: []*api.Mount{
			{Source: "/srv/data", Target: "/data", CreateHostPath: true, Readonly: true},
			{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/run/job", TmpfsSizeBytes: 1 << 20},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "job-data", Target: "/var/lib/job"},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/scratch"},
		},
	}
	if err := validateSpec(bundle); err != nil {
		t.Fatalf("validateSpec(bundle with process options and mounts) = %v, want nil", err)
	}

	img := func(edit func(*api.ServiceSpec)) *api.ServiceSpec {
		s := &api.ServiceSpec{Name: "web", Image: "img"}
		edit(s)
		return s
	}
	bundled := func(edit func(*api.ServiceSpec)) *api.ServiceSpec {
		s := &api.ServiceSpec{Name: "job", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("#!/bin/sh\n")}}}
		edit(s)
		return s
	}
	for _, tc := range []struct {
		spec *api.ServiceSpec
		want string
	}{
		{img(func(s *api.ServiceSpec) { s.User = "a b" }), `user "a b"`},
		{img(func(s *api.ServiceSpec) { s.User = "app:" }), `user "app:"`},
		{img(func(s *api.ServiceSpec) { s.Groups = []string{"wheel;rm"} }), "group"},
		{img(func(s *api.ServiceSpec) { s.Workdir = "app" }), `workdir "app"`},
		{img(func(s *api.ServiceSpec) { s.Workdir = "/app/../etc" }), "workdir"},
		{img(func(s *api.ServiceSpec) { s.StopSignal = "SIGNOPE" }), "stop_signal"},
		{img(func(s *api.ServiceSpec) { s.StopSignal = "99" }), "stop_signal"},
		{img(func(s *api.ServiceSpec) { s.Ulimits = []*api.Ulimit{{Name: "files", Soft: 1, Hard: 1}} }), `ulimit "files"`},
		{img(func(s *api.ServiceSpec) { s.Ulimits = []*api.Ulimit{{Name: "nofile", Soft: 10, Hard: 5}} }), "soft limit 10 above the hard limit 5"},
		{img(func(s *api.ServiceSpec) { s.Ulimits = []*api.Ulimit{{Name: "nofile", Soft: -1, Hard: 5}} }), "soft limit"},
		{img(func(s *api.ServiceSpec) {
			s.Ulimits = []*api.Ulimit{{Name: "nofile", Soft: 1, Hard: 1}, {Name: "nofile", Soft: 2, Hard: 2}}
		}), "ulimit nofile is set twice"},
		{img(func(s *api.ServiceSpec) { s.Hostname = "under_score" }), "hostname"},
		{img(func(s *api.ServiceSpec) { s.Hostname = strings.Repeat("a", 65) }), "hostname"},
		{img(func(s *api.ServiceSpec) { s.CapAdd = []string{"NET_FLY"} }), `capability "NET_FLY"`},
		{img(func(s *api.ServiceSpec) { s.CapDrop = []string{""} }), "capability"},
		{img(func(s *api.ServiceSpec) { s.Sysctls = map[string]string{"vm.swappiness": "10"} }), `sysctl "vm.swappiness" is not namespaced`},
		{img(func(s *api.ServiceSpec) { s.Sysctls = map[string]string{"kernel.hostname": "x"} }), "not namespaced"},
		{img(func(s *api.ServiceSpec) { s.Sysctls = map[string]string{"net.ipv4.ip_forward": ""} }), "value"},
		{img(func(s *api.ServiceSpec) { s.ExtraHosts = []string{"gateway"} }), "extra host"},
		{img(func(s *api.ServiceSpec) { s.ExtraHosts = []string{"gateway:not-an-ip"} }), "not an IP address"},
		{img(func(s *api.ServiceSpec) { s.Dns = []string{"dns.example"} }), `dns "dns.example"`},
		{img(func(s *api.ServiceSpec) { s.DnsSearch = []string{"a b"} }), "dns_search"},
		{img(func(s *api.ServiceSpec) { s.DnsOptions = []string{"ndots 2"} }), "dns_options"},
		{img(func(s *api.ServiceSpec) { s.ShmSizeBytes = -1 }), "shm_size"},
		{img(func(s *api.ServiceSpec) { s.Mounts = []*api.Mount{{Source: "data", Target: "/data"}} }), "the source must be an absolute path"},
		{img(func(s *api.ServiceSpec) { s.Mounts = []*api.Mount{{Source: "/srv", Target: "data"}} }), `mount target "data"`},
		{img(func(s *api.ServiceSpec) { s.Mounts = []*api.Mount{{Source: "/srv", Target: "/"}} }), "root file system"},
		{img(func(s *api.ServiceSpec) {
			s.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_TMPFS, Source: "/srv", Target: "/run"}}
		}), "a tmpfs has no source"},
		{img(func(s *api.ServiceSpec) {
			s.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/run", TmpfsMode: 0o17777}}
		}), "mode"},
		{img(func(s *api.ServiceSpec) {
			s.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/run", CreateHostPath: true}}
		}), "create_host_path"},
		{img(func(s *api.ServiceSpec) { s.Mounts = []*api.Mount{{Source: "/srv", Target: "/d", TmpfsSizeBytes: 1}} }), "tmpfs size and mode"},
		{img(func(s *api.ServiceSpec) { s.Mounts = []*api.Mount{{Type: 7, Target: "/d"}} }), "type 7"},
		{img(func(s *api.ServiceSpec) {
			s.Mounts = []*api.Mount{{Source: "/a", Target: "/data"}, {Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/data/"}}
		}), "two mounts target /data"},
		{bundled(func(s *api.ServiceSpec) { s.Hostname = "h"; s.ReadOnly = true }), "hook bundle: hostname, read_only apply to containers only"},
		{bundled(func(s *api.ServiceSpec) { s.Mounts = []*api.Mount{{Source: "a", Target: "/b"}} }), "the source must be an absolute path"},
		{bundled(func(s *api.ServiceSpec) { s.Init = true }), "init"},
	} {
		err := validateSpec(tc.spec)
		if reason.Of(err) != reason.InvalidSpec || !strings.Contains(reason.Sentence(err), tc.want) {
			t.Errorf("validateSpec(%v) = %v, want invalid_spec naming %q", tc.spec, err, tc.want)
		}
	}
}

// TestValidateSpecProcessListBounds: the new lists are bounded like the
// others (limit_exceeded, naming the field).
func TestValidateSpecProcessListBounds(t *testing.T) {
	spec := &api.ServiceSpec{Name: "web", Image: "img", Dns: []string{"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4"}}
	if err := validateSpec(spec); reason.Of(err) != reason.LimitExceeded || !strings.Contains(reason.Sentence(err), "dns has 4 entries; the limit is 3") {
		t.Errorf("validateSpec(4 nameservers) = %v, want limit_exceeded naming dns", err)
	}
}
