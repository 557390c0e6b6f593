package compose

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// web is a one-service file: service web with image x and body's lines
// (indented as the service's keys).
func web(body string) string { return "services:\n  web:\n    image: x\n" + body }

// TestProcessKeys: each process and container key lands in its spec
// field, in the form `service create` writes it.
func TestProcessKeys(t *testing.T) {
	tmpfs := func(target string, size int64, mode uint32, ro bool) *api.Mount {
		return &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: target, TmpfsSizeBytes: size, TmpfsMode: mode, Readonly: ro}
	}
	mounts := func(want ...*api.Mount) func(*api.ServiceSpec) bool {
		return func(s *api.ServiceSpec) bool {
			return slices.EqualFunc(s.Mounts, want, func(a, b *api.Mount) bool { return proto.Equal(a, b) })
		}
	}
	ulimits := func(want ...*api.Ulimit) func(*api.ServiceSpec) bool {
		return func(s *api.ServiceSpec) bool {
			return slices.EqualFunc(s.Ulimits, want, func(a, b *api.Ulimit) bool { return proto.Equal(a, b) })
		}
	}
	list := func(got func(*api.ServiceSpec) []string, want ...string) func(*api.ServiceSpec) bool {
		return func(s *api.ServiceSpec) bool { return slices.Equal(got(s), want) }
	}
	for _, tc := range []struct {
		name, body string
		check      func(*api.ServiceSpec) bool
	}{
		{"user", "    user: \"1000:1000\"\n", func(s *api.ServiceSpec) bool { return s.User == "1000:1000" }},
		{"group_add", "    group_add: [audio, \"44\"]\n", list((*api.ServiceSpec).GetGroups, "audio", "44")},
		{"working_dir", "    working_dir: /app\n", func(s *api.ServiceSpec) bool { return s.Workdir == "/app" }},
		{"hostname", "    hostname: web-1\n", func(s *api.ServiceSpec) bool { return s.Hostname == "web-1" }},
		{"cap_add spelled as procopts does", "    cap_add: [net_admin, CAP_SYS_TIME]\n",
			list((*api.ServiceSpec).GetCapAdd, "CAP_NET_ADMIN", "CAP_SYS_TIME")},
		{"cap_drop ALL", "    cap_drop: [all]\n", list((*api.ServiceSpec).GetCapDrop, "ALL")},
		{"sysctls map", "    sysctls:\n      net.core.somaxconn: 1024\n      kernel.shmmax: 65536\n",
			func(s *api.ServiceSpec) bool {
				return len(s.Sysctls) == 2 && s.Sysctls["net.core.somaxconn"] == "1024" && s.Sysctls["kernel.shmmax"] == "65536"
			}},
		{"sysctls list", "    sysctls: [net.ipv4.ip_forward=1]\n",
			func(s *api.ServiceSpec) bool { return len(s.Sysctls) == 1 && s.Sysctls["net.ipv4.ip_forward"] == "1" }},
		{"ulimit single", "    ulimits:\n      nofile: 1024\n", ulimits(&api.Ulimit{Name: "nofile", Soft: 1024, Hard: 1024})},
		{"ulimit soft hard, sorted", "    ulimits:\n      nproc: {soft: 10, hard: 20}\n      core: -1\n",
			ulimits(&api.Ulimit{Name: "core", Soft: -1, Hard: -1}, &api.Ulimit{Name: "nproc", Soft: 10, Hard: 20})},
		{"tmpfs string", "    tmpfs: /run\n", mounts(tmpfs("/run", 0, 0, false))},
		{"tmpfs list with options", "    tmpfs:\n      - /run:size=64m,mode=1777\n      - /cache:ro\n",
			mounts(tmpfs("/run", 64<<20, 0o1777, false), tmpfs("/cache", 0, 0, true))},
		{"tmpfs volume", "    volumes:\n      - type: tmpfs\n        target: /t\n        tmpfs: {size: 1g, mode: 0o700}\n",
			mounts(tmpfs("/t", 1<<30, 0o700, false))},
		{"tmpfs volume read-only, no options", "    volumes:\n      - type: tmpfs\n        target: /t\n        read_only: true\n",
			mounts(tmpfs("/t", 0, 0, true))},
		{"bind short syntax creates the host path", "    volumes: [\"/a:/b\"]\n",
			mounts(&api.Mount{Source: "/a", Target: "/b", CreateHostPath: true})},
		{"bind long syntax does not by default", "    volumes:\n      - type: bind\n        source: /a\n        target: /b\n",
			mounts(&api.Mount{Source: "/a", Target: "/b"})},
		{"bind create_host_path", "    volumes:\n      - type: bind\n        source: /a\n        target: /b\n        bind: {create_host_path: true}\n",
			mounts(&api.Mount{Source: "/a", Target: "/b", CreateHostPath: true})},
		{"bind create_host_path false", "    volumes:\n      - type: bind\n        source: /a\n        target: /b\n        read_only: true\n        bind: {create_host_path: false}\n",
			mounts(&api.Mount{Source: "/a", Target: "/b", Readonly: true})},
		{"stop_signal", "    stop_signal: SIGTERM\n", func(s *api.ServiceSpec) bool { return s.StopSignal == "SIGTERM" }},
		{"init", "    init: true\n", func(s *api.ServiceSpec) bool { return s.Init }},
		{"init false", "    init: false\n", func(s *api.ServiceSpec) bool { return !s.Init }},
		{"read_only", "    read_only: true\n", func(s *api.ServiceSpec) bool { return s.ReadOnly }},
		{"extra_hosts list, sorted", "    extra_hosts: [\"z:10.0.0.9\", \"a=10.0.0.1\", \"v6:::1\"]\n",
			list((*api.ServiceSpec).GetExtraHosts, "a:10.0.0.1", "v6:::1", "z:10.0.0.9")},
		{"extra_hosts map", "    extra_hosts:\n      db: 10.0.0.5\n", list((*api.ServiceSpec).GetExtraHosts, "db:10.0.0.5")},
		{"dns string", "    dns: 10.0.0.2\n", list((*api.ServiceSpec).GetDns, "10.0.0.2")},
		{"dns list", "    dns: [10.0.0.2, \"fd00::53\"]\n", list((*api.ServiceSpec).GetDns, "10.0.0.2", "fd00::53")},
		{"dns_search", "    dns_search: [a.example, b.example]\n", list((*api.ServiceSpec).GetDnsSearch, "a.example", "b.example")},
		{"dns_opt", "    dns_opt: [\"ndots:2\", rotate]\n", list((*api.ServiceSpec).GetDnsOptions, "ndots:2", "rotate")},
		{"shm_size", "    shm_size: 64m\n", func(s *api.ServiceSpec) bool { return s.ShmSizeBytes == 64<<20 }},
		{"shm_size bytes", "    shm_size: 1000000\n", func(s *api.ServiceSpec) bool { return s.ShmSizeBytes == 1000000 }},
		{"none set", "", func(s *api.ServiceSpec) bool {
			return s.User == "" && s.Groups == nil && s.CapAdd == nil && s.Sysctls == nil && s.Ulimits == nil &&
				s.Mounts == nil && !s.Init && !s.ReadOnly && s.ExtraHosts == nil && s.Dns == nil && s.ShmSizeBytes == 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := load(t, web(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if s := st.Services[0]; !tc.check(s) {
				t.Fatalf("spec %v", s)
			}
		})
	}
}

// TestProcessBadValues: a value procopts (or the spec) refuses is a plain
// error naming the key, before anything is deployed.
func TestProcessBadValues(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"capability", "    cap_add: [NET_WIZARD]\n", `services.web.cap_add: capability "NET_WIZARD"`},
		{"cap_drop", "    cap_drop: [\"\"]\n", "services.web.cap_drop: capability"},
		{"node-wide sysctl", "    sysctls: [vm.swappiness=10]\n", `services.web.sysctls: sysctl "vm.swappiness" is not namespaced`},
		{"ulimit name", "    ulimits:\n      files: 10\n", `services.web.ulimits: ulimit "files"`},
		{"ulimit soft above hard", "    ulimits:\n      nofile: {soft: 20, hard: 10}\n", "soft limit 20 above the hard limit 10"},
		{"stop signal", "    stop_signal: SIGNOPE\n", `services.web.stop_signal: signal "SIGNOPE"`},
		{"extra host", "    extra_hosts: [\"db:not-an-ip\"]\n", `services.web.extra_hosts: extra host "db:not-an-ip"`},
		{"dns", "    dns: [resolver.example]\n", `services.web.dns: "resolver.example": want a nameserver's IP address`},
		{"four nameservers", "    dns: [10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4]\n", "services.web.dns: 4 nameservers: at most 3"},
		{"seven search domains", "    dns_search: [a, b, c, d, e, f, g]\n", "services.web.dns_search: 7 domains: at most 6"},
		{"working_dir relative", "    working_dir: app\n", `services.web.working_dir: "app": want a clean absolute path`},
		{"tmpfs size", "    tmpfs: /run:size=lots\n", `services.web.tmpfs: "/run:size=lots": size "lots"`},
		{"tmpfs mode", "    tmpfs: /run:mode=999\n", `services.web.tmpfs: "/run:mode=999": mode "999"`},
		{"tmpfs volume mode", "    volumes:\n      - type: tmpfs\n        target: /t\n        tmpfs: {mode: 0o17777}\n", "services.web.volumes.tmpfs.mode: 017777"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, web(tc.body))
			if err == nil || reason.Of(err) != "" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a plain error holding %q", err, tc.want)
			}
		})
	}
}

// loadWarned loads yaml and returns what it warned, in order.
func loadWarned(t *testing.T, yaml string) (*Stack, []string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	st, err := Load(context.Background(), Options{Files: []string{path}, Name: "st", Warn: func(l string) { lines = append(lines, l) }})
	return st, lines, err
}

// TestWarnings: keys without meaning in a cluster are accepted, with one
// line per key naming every service that has it; a mapped restart says
// how it was read.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
		check      func(*Stack) bool
	}{
		{"container_name on two services, one line",
			"services:\n  a:\n    image: x\n    container_name: a1\n  b:\n    image: x\n    container_name: b1\n",
			[]string{"compose key container_name (services a, b): ignored; jaco names each replica itself"}, nil},
		{"expose", web("    expose: [\"80\"]\n"),
			[]string{"compose key expose (service web): ignored; jaco filters no ports: who may connect is the service's network access"}, nil},
		{"links",
			"services:\n  db:\n    image: x\n  web:\n    image: x\n    links: [db]\n",
			[]string{"compose key links (service web): ignored; a service is reached by its jaco name (STACK_SERVICE) on a network both are on"}, nil},
		{"build beside image", web("    build: .\n"),
			[]string{"compose key build (service web): ignored; jaco builds nothing and runs the image given"},
			func(st *Stack) bool { return st.Services[0].Image == "x" }},
		{"build with options beside image", web("    build:\n      context: .\n      args: {A: b}\n"),
			[]string{"compose key build (service web): ignored; jaco builds nothing and runs the image given"}, nil},
		{"restart mapped", web("    restart: on-failure:5\n"),
			[]string{"compose key restart (service web): read as deploy.restart_policy (no: none; always, unless-stopped: any; on-failure[:N]: on-failure, N attempts)"},
			func(st *Stack) bool {
				r := st.Services[0].Restart
				return r.GetCondition() == api.RestartCondition_RESTART_CONDITION_ON_FAILURE && r.GetMaxAttempts() == 5
			}},
		{"restart beside restart_policy", web("    restart: \"no\"\n    deploy:\n      restart_policy: {condition: any}\n"),
			[]string{"compose key restart (service web): ignored; deploy.restart_policy is followed"},
			func(st *Stack) bool {
				return st.Services[0].Restart.GetCondition() == api.RestartCondition_RESTART_CONDITION_ANY
			}},
		{"bridge network", web("    networks: [n]\nnetworks:\n  n: {driver: bridge}\n"),
			[]string{"compose key networks.n.driver: bridge is read as overlay, the stack's own network across the cluster"},
			func(st *Stack) bool { return len(st.Networks) == 1 && st.Networks[0].Name == "st_n" }},
		{"internal network", web("    networks: [n]\nnetworks:\n  n: {internal: true}\n"),
			[]string{"compose key networks.n.internal: not enforced; replicas still reach outside the cluster through their node's bridge"}, nil},
		{"attachable and encrypted, quietly", web("    networks: [n]\nnetworks:\n  n:\n    driver: overlay\n    attachable: true\n    driver_opts: {encrypted: \"\"}\n"),
			nil, func(st *Stack) bool { return len(st.Networks) == 1 }},
		{"several keys, sorted",
			web("    container_name: web1\n    expose: [\"80\"]\n    restart: always\n"),
			[]string{
				"compose key container_name (service web): ignored; jaco names each replica itself",
				"compose key expose (service web): ignored; jaco filters no ports: who may connect is the service's network access",
				"compose key restart (service web): read as deploy.restart_policy (no: none; always, unless-stopped: any; on-failure[:N]: on-failure, N attempts)",
			}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, lines, err := loadWarned(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lines, tc.want) {
				t.Fatalf("warned\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.check != nil && !tc.check(st) {
				t.Fatalf("stack %+v", st)
			}
		})
	}
}

// TestOnePass: every refusal of every service and section comes in one
// error, with the reason word, and the mistakes in values found on the
// way with it; the services before and after one without an image are
// still read.
func TestOnePass(t *testing.T) {
	yaml := `services:
  a:
    build: ./a
  b:
    image: x
    privileged: true
    volumes: [data:/data:nocopy]
  c:
    image: x
    restart: sometimes
  d:
    image: x
    devices: [/dev/kvm]
networks:
  n: {driver: macvlan}
volumes:
  data: {driver: nfs}
`
	_, lines, err := loadWarned(t, yaml)
	if reason.Of(err) != reason.UnsupportedComposeKey {
		t.Fatalf("got %v, want unsupported_compose_key", err)
	}
	want := "networks.n.driver (macvlan; jaco networks are overlay), " +
		"services.a.build (no image: jaco builds nothing; build the image, push it to a registry (or jaco image load it on every node) and give image), " +
		"services.b.privileged, services.d.devices, volumes.data.driver (nfs; jaco volumes are local): " +
		"jaco cannot honour these compose keys; nothing was changed; also: services.c.restart: \"sometimes\""
	if got := reason.Sentence(err); !strings.HasPrefix(got, want) {
		t.Fatalf("got\n%s\nwant it to start\n%s", got, want)
	}
	if len(lines) != 0 {
		t.Fatalf("warned %q, want nothing", lines)
	}
}

// TestValueErrorsOnePass: without refusals, the mistakes in values of
// every service come together, as a plain error.
func TestValueErrorsOnePass(t *testing.T) {
	_, err := load(t, "services:\n  a:\n    image: x\n    cap_add: [NOPE]\n  b:\n    image: x\n    stop_signal: SIGNOPE\n")
	if err == nil || reason.Of(err) != "" || !strings.Contains(err.Error(), "services.a.cap_add") || !strings.Contains(err.Error(), "services.b.stop_signal") {
		t.Fatalf("got %v, want a plain error naming services.a.cap_add and services.b.stop_signal", err)
	}
}
