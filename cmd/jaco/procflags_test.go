package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// applySpecFlags parses args as `service create` (all) or `service update`
// flags and applies them to spec.
func applySpecFlags(t *testing.T, spec *api.ServiceSpec, all bool, args ...string) error {
	t.Helper()
	var f specFlags
	cmd := &cobra.Command{}
	f.register(cmd.Flags())
	if err := cmd.Flags().Parse(args); err != nil {
		return err
	}
	return f.apply(cmd, spec, all)
}

// TestProcFlags: each process and container flag lands in its spec
// field, as docker service create spells the flag.
func TestProcFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *api.ServiceSpec
	}{
		{[]string{"--user", "1000:1000"}, &api.ServiceSpec{User: "1000:1000"}},
		{[]string{"-u", "www-data"}, &api.ServiceSpec{User: "www-data"}},
		{[]string{"--group", "audio", "--group", "44"}, &api.ServiceSpec{Groups: []string{"audio", "44"}}},
		{[]string{"--workdir", "/app"}, &api.ServiceSpec{Workdir: "/app"}},
		{[]string{"-w", "/"}, &api.ServiceSpec{Workdir: "/"}},
		{[]string{"--hostname", "web-1.example"}, &api.ServiceSpec{Hostname: "web-1.example"}},
		{[]string{"--hostname", "{{.Service.Name}}-{{.Task.Slot}}"}, &api.ServiceSpec{Hostname: "{{.Service.Name}}-{{.Task.Slot}}"}},
		{[]string{"--cap-add", "net_admin", "--cap-add", "CAP_SYS_TIME"}, &api.ServiceSpec{CapAdd: []string{"CAP_NET_ADMIN", "CAP_SYS_TIME"}}},
		{[]string{"--cap-drop", "all"}, &api.ServiceSpec{CapDrop: []string{"ALL"}}},
		{[]string{"--sysctl", "net.core.somaxconn=1024", "--sysctl", "kernel.shmmax=65536"},
			&api.ServiceSpec{Sysctls: map[string]string{"net.core.somaxconn": "1024", "kernel.shmmax": "65536"}}},
		{[]string{"--sysctl", "net.ipv4.ip_local_port_range=1024 65000"},
			&api.ServiceSpec{Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "1024 65000"}}},
		{[]string{"--ulimit", "nofile=1024:2048", "--ulimit", "nproc=64", "--ulimit", "core=-1"},
			&api.ServiceSpec{Ulimits: []*api.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}, {Name: "nproc", Soft: 64, Hard: 64}, {Name: "core", Soft: -1, Hard: -1}}}},
		{[]string{"--ulimit", "memlock=0:-1"}, &api.ServiceSpec{Ulimits: []*api.Ulimit{{Name: "memlock", Soft: 0, Hard: -1}}}},
		{[]string{"--stop-signal", "SIGTERM"}, &api.ServiceSpec{StopSignal: "SIGTERM"}},
		{[]string{"--stop-signal", "15"}, &api.ServiceSpec{StopSignal: "15"}},
		{[]string{"--init"}, &api.ServiceSpec{Init: true}},
		{[]string{"--read-only"}, &api.ServiceSpec{ReadOnly: true}},
		{[]string{"--host", "db:10.0.0.5", "--host", "v6:::1"}, &api.ServiceSpec{ExtraHosts: []string{"db:10.0.0.5", "v6:::1"}}},
		{[]string{"--dns", "10.0.0.2", "--dns", "fd00::53"}, &api.ServiceSpec{Dns: []string{"10.0.0.2", "fd00::53"}}},
		{[]string{"--dns-search", "a.example"}, &api.ServiceSpec{DnsSearch: []string{"a.example"}}},
		{[]string{"--dns-option", "ndots:2", "--dns-option", "rotate"}, &api.ServiceSpec{DnsOptions: []string{"ndots:2", "rotate"}}},
		{[]string{"--shm-size", "64m"}, &api.ServiceSpec{ShmSizeBytes: 64 << 20}},
		{[]string{"--shm-size", "1GiB"}, &api.ServiceSpec{ShmSizeBytes: 1 << 30}},
		{[]string{"--mount", "type=tmpfs,target=/run,tmpfs-size=16m,tmpfs-mode=755"},
			&api.ServiceSpec{Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/run", TmpfsSizeBytes: 16 << 20, TmpfsMode: 0o755}}}},
		{[]string{"--mount", "type=bind,source=/srv,target=/data,bind-create-host-path"},
			&api.ServiceSpec{Mounts: []*api.Mount{{Source: "/srv", Target: "/data", CreateHostPath: true}}}},
	} {
		spec := &api.ServiceSpec{}
		if err := applySpecFlags(t, spec, false, tc.args...); err != nil {
			t.Errorf("%s: %v", strings.Join(tc.args, " "), err)
			continue
		}
		spec.Placement, spec.Restart = nil, nil // made empty by every apply
		if !proto.Equal(spec, tc.want) {
			t.Errorf("%s: spec %v, want %v", strings.Join(tc.args, " "), spec, tc.want)
		}
	}
}

// TestProcFlagsBad: a value the runtimes would not read is refused as the
// flag is parsed, so before any request, on update as on create.
func TestProcFlagsBad(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--user", "a:b:c"}, "want USER or USER:GROUP"},
		{[]string{"--user", ":1000"}, "want USER or USER:GROUP"},
		{[]string{"--group", "wheel group"}, "want a group name or numeric id"},
		{[]string{"--workdir", "/app/../etc"}, "want a clean absolute path"},
		{[]string{"--hostname", "-web"}, "want letters, digits"},
		{[]string{"--hostname", strings.Repeat("a", 65)}, "at most 64 characters"},
		{[]string{"--cap-add", "CAP_NOPE"}, `capability "CAP_NOPE"`},
		{[]string{"--sysctl", "kernel.hostname=x"}, "is not namespaced"},
		{[]string{"--sysctl", "net.core.somaxconn="}, "want KEY=VALUE"},
		{[]string{"--ulimit", "nofile"}, "want NAME=SOFT[:HARD]"},
		{[]string{"--ulimit", "nofile=1:x"}, "want NAME=SOFT[:HARD] with whole numbers"},
		{[]string{"--ulimit", "nofile=-2"}, "want 0 or more (-1: unlimited)"},
		{[]string{"--ulimit", "nofile=10:5"}, "soft limit 10 above the hard limit 5"},
		{[]string{"--ulimit", "nofile=-1:5"}, "soft limit -1 above the hard limit 5"},
		{[]string{"--stop-signal", "SIGWHAT"}, `signal "SIGWHAT"`},
		{[]string{"--stop-signal", "99"}, "want 1 to 64"},
		{[]string{"--host", "db:10.0.0"}, `"10.0.0" is not an IP address`},
		{[]string{"--host", ":10.0.0.1"}, "want HOST:IP"},
		{[]string{"--dns", "8.8.8"}, "want a nameserver's IP address"},
		{[]string{"--dns-option", "ndots 2"}, "want one word"},
		{[]string{"--dns", "10.0.0.1", "--dns", "10.0.0.2", "--dns", "10.0.0.3", "--dns", "10.0.0.4"}, "at most 3 nameservers"},
		{[]string{"--dns-search", "a", "--dns-search", "b", "--dns-search", "c", "--dns-search", "d", "--dns-search", "e",
			"--dns-search", "f", "--dns-search", "g"}, "at most 6 search domains"},
		{[]string{"--shm-size", "-1"}, `size "-1"`},
		{[]string{"--shm-size", "lots"}, `size "lots"`},
	} {
		spec := &api.ServiceSpec{}
		err := applySpecFlags(t, spec, false, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error holding %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestProcFlagsUpdate: on update a flag not given leaves its field as it
// is, a list flag given replaces the list, and an empty string or 0
// clears a single value.
func TestProcFlagsUpdate(t *testing.T) {
	stored := func() *api.ServiceSpec {
		return &api.ServiceSpec{Name: "web", Image: "x", User: "app", Workdir: "/app", Hostname: "h", StopSignal: "SIGTERM",
			Groups: []string{"audio"}, CapAdd: []string{"CAP_NET_ADMIN"}, CapDrop: []string{"CAP_NET_RAW"},
			Sysctls: map[string]string{"net.core.somaxconn": "1"}, Ulimits: []*api.Ulimit{{Name: "nofile", Soft: 1, Hard: 2}},
			Init: true, ReadOnly: true, ExtraHosts: []string{"a:10.0.0.1"}, Dns: []string{"10.0.0.2"},
			DnsSearch: []string{"a.example"}, DnsOptions: []string{"ndots:1"}, ShmSizeBytes: 1 << 20}
	}

	spec := stored()
	if err := applySpecFlags(t, spec, false, "--replicas", "2"); err != nil {
		t.Fatal(err)
	}
	want := stored()
	want.Replicas = 2
	spec.Placement, spec.Restart = nil, nil // made empty by every apply
	if !proto.Equal(spec, want) {
		t.Fatalf("flags not given changed the spec:\n%v\nwant\n%v", spec, want)
	}

	spec = stored()
	err := applySpecFlags(t, spec, false, "--cap-add", "SYS_TIME", "--ulimit", "nproc=5", "--sysctl", "net.ipv4.ip_forward=1",
		"--host", "b:10.0.0.9", "--user", "", "--stop-signal", "", "--init=false", "--shm-size", "0")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !slices.Equal(spec.CapAdd, []string{"CAP_SYS_TIME"}), len(spec.Ulimits) != 1 || spec.Ulimits[0].Name != "nproc",
		len(spec.Sysctls) != 1 || spec.Sysctls["net.ipv4.ip_forward"] != "1", !slices.Equal(spec.ExtraHosts, []string{"b:10.0.0.9"}):
		t.Fatalf("lists given were not replaced: %v", spec)
	case spec.User != "" || spec.StopSignal != "" || spec.Init || spec.ShmSizeBytes != 0:
		t.Fatalf("single values given empty were not cleared: %v", spec)
	case !slices.Equal(spec.CapDrop, []string{"CAP_NET_RAW"}) || spec.Workdir != "/app" || !spec.ReadOnly || len(spec.Dns) != 1:
		t.Fatalf("flags not given changed: %v", spec)
	}
}

// TestProcFlagsCreate: create writes nothing for a flag not given, so a
// spec carries only the options asked for.
func TestProcFlagsCreate(t *testing.T) {
	spec := &api.ServiceSpec{}
	if err := applySpecFlags(t, spec, true); err != nil {
		t.Fatal(err)
	}
	if spec.User != "" || spec.Groups != nil || spec.CapAdd != nil || spec.Sysctls != nil || spec.Ulimits != nil ||
		spec.Init || spec.ReadOnly || spec.ExtraHosts != nil || spec.Dns != nil || spec.ShmSizeBytes != 0 || spec.StopSignal != "" {
		t.Fatalf("create without the flags set %v", spec)
	}
}
