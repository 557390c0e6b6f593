package compose

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// render is the stack as the golden files hold it: specs as protojson,
// file paths relative to dir.
func render(t *testing.T, st *Stack, dir string) []byte {
	t.Helper()
	var specs []json.RawMessage
	for _, s := range st.Services {
		b, err := protojson.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, b)
	}
	rel := func(fs []File) []File {
		out := make([]File, len(fs))
		for i, f := range fs {
			if f.Path != "" {
				p, err := filepath.Rel(dir, f.Path)
				if err != nil {
					t.Fatal(err)
				}
				f.Path = p
			}
			out[i] = f
		}
		return out
	}
	b, err := json.MarshalIndent(map[string]any{
		"services": specs, "networks": st.Networks, "secrets": rel(st.Secrets), "configs": rel(st.Configs),
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// protojson's spacing is not stable: compact and indent again.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	b, _ = json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (run with -update and read the diff):\n%s", path, got)
	}
}

// TestEveryMappedKey loads a file using every key jaco maps, with an
// override file, env_file, interpolation from the environment (the .env
// beside it, which docker stack deploy does not read, must change
// nothing) and a profile left off, and compares the stack with the
// golden file.
func TestEveryMappedKey(t *testing.T) {
	dir, _ := filepath.Abs("testdata/full")
	var warned []string
	st, err := Load(context.Background(), Options{
		Files: []string{filepath.Join(dir, "compose.yaml"), filepath.Join(dir, "override.yaml")},
		Name:  "shop",
		Env:   []string{"MODE=production", "WEB_TAG=1.2"},
		Warn:  func(line string) { warned = append(warned, line) },
	})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.golden.json", render(t, st, dir))
	// web has both restart and deploy.restart_policy.
	if want := "compose key restart (service web): ignored; deploy.restart_policy is followed"; len(warned) != 1 || warned[0] != want {
		t.Errorf("warned %q, want the one line %q", warned, want)
	}
}

// TestProfileEnablesAService: the debug service's privileged key is
// refused once its profile is on, and not while it is off (above).
func TestProfileEnablesAService(t *testing.T) {
	dir, _ := filepath.Abs("testdata/full")
	_, err := Load(context.Background(), Options{
		Files: []string{filepath.Join(dir, "compose.yaml")}, Name: "shop", Profiles: []string{"debug"},
	})
	if reason.Of(err) != reason.UnsupportedComposeKey || !strings.Contains(err.Error(), "services.debug.privileged") {
		t.Fatalf("got %v, want unsupported_compose_key naming services.debug.privileged", err)
	}
}

func load(t *testing.T, yaml string, env ...string) (*Stack, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(context.Background(), Options{Files: []string{path}, Name: "st", Env: env})
}

// TestRefusedByName: every key jaco cannot honour is named, all of them
// at once, with the reason word.
func TestRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"build without image", "services:\n  web:\n    build: .\n",
			[]string{"services.web.build (no image: jaco builds nothing; build the image, push it to a registry (or jaco image load it on every node) and give image)"}},
		{"several", "services:\n  web:\n    image: x\n    privileged: true\n    security_opt: [seccomp:unconfined]\n    devices: [/dev/kvm]\n",
			[]string{"services.web.devices", "services.web.privileged", "services.web.security_opt"}},
		// More of volumes in volumes_test.go.
		{"volume subpath", "services:\n  web:\n    image: x\n    volumes:\n      - type: volume\n        source: data\n        target: /data\n        volume: {subpath: x}\nvolumes:\n  data:\n",
			[]string{"services.web.volumes.volume.subpath"}},
		{"volume driver", "services:\n  web:\n    image: x\n    volumes: [data:/data]\nvolumes:\n  data: {driver: nfs}\n",
			[]string{"volumes.data.driver (nfs; jaco volumes are local)"}},
		{"tmpfs option", "services:\n  web:\n    image: x\n    tmpfs: /run:size=1m,noexec\n",
			[]string{"services.web.tmpfs (option noexec; only size, mode, ro and rw)"}},
		{"network driver option", "services:\n  web:\n    image: x\nnetworks:\n  n:\n    driver_opts: {com.docker.network.driver.mtu: \"1400\"}\n",
			[]string{"networks.n.driver_opts.com.docker.network.driver.mtu"}},
		{"bind option", "services:\n  web:\n    image: x\n    volumes:\n      - type: bind\n        source: /a\n        target: /b\n        bind: {propagation: shared}\n",
			[]string{"services.web.volumes.bind.propagation"}},
		{"port host ip", "services:\n  web:\n    image: x\n    ports: [\"127.0.0.1:80:80\"]\n", []string{"services.web.ports.host_ip"}},
		{"port without published", "services:\n  web:\n    image: x\n    ports: [\"80\"]\n", []string{"services.web.ports (80 without a published port)"}},
		{"port long name", "services:\n  web:\n    image: x\n    ports:\n      - target: 80\n        published: 80\n        app_protocol: http\n", []string{"services.web.ports.app_protocol"}},
		{"unknown mode", "services:\n  web:\n    image: x\n    deploy: {mode: batch}\n", []string{"services.web.deploy.mode (batch)"}},
		{"max per node", "services:\n  web:\n    image: x\n    deploy:\n      placement: {max_replicas_per_node: 1}\n", []string{"services.web.deploy.placement.max_replicas_per_node"}},
		{"pids limit", "services:\n  web:\n    image: x\n    deploy:\n      resources:\n        limits: {pids: 10}\n", []string{"services.web.deploy.resources.limits.pids"}},
		{"completed condition", "services:\n  a:\n    image: x\n  web:\n    image: x\n    depends_on:\n      a: {condition: service_completed_successfully}\n",
			[]string{"services.web.depends_on.a.condition (service_completed_successfully)"}},
		{"optional dependency", "services:\n  a:\n    image: x\n  web:\n    image: x\n    depends_on:\n      a: {condition: service_started, required: false}\n",
			[]string{"services.web.depends_on.a.required (false; jaco always waits)"}},
		{"selinux bind", "services:\n  web:\n    image: x\n    volumes: [\"/a:/b:z\"]\n", []string{"services.web.volumes.bind.selinux"}},
		{"network alias", "services:\n  web:\n    image: x\n    networks:\n      n: {aliases: [w]}\nnetworks:\n  n:\n", []string{"services.web.networks.n.aliases"}},
		{"network driver", "services:\n  web:\n    image: x\nnetworks:\n  n: {driver: macvlan}\n", []string{"networks.n.driver (macvlan; jaco networks are overlay)"}},
		{"secret from env", "services:\n  web:\n    image: x\nsecrets:\n  s: {environment: FOO}\n", []string{"secrets.s.environment"}},
		{"healthcheck start_interval", "services:\n  web:\n    image: x\n    healthcheck: {test: [CMD, a], start_interval: 1s}\n", []string{"services.web.healthcheck.start_interval"}},
		{"interpolated key", "services:\n  web:\n    image: x\n    domainname: ${WHO}\n", []string{"services.web.domainname"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml, "WHO=me")
			if reason.Of(err) != reason.UnsupportedComposeKey {
				t.Fatalf("got %v, want unsupported_compose_key", err)
			}
			want := strings.Join(tc.want, ", ") + ": jaco cannot honour"
			if !strings.Contains(reason.Sentence(err), want) {
				t.Fatalf("got %q, want it to start %q", reason.Sentence(err), want)
			}
		})
	}
}

// TestBadValues are mistakes in the file, not keys jaco lacks: plain
// errors naming the key.
func TestBadValues(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no image", "services:\n  web:\n    command: [a]\n", "neither an image nor a build context"},
		{"health test", "services:\n  web:\n    image: x\n    healthcheck: {test: [BOGUS, a]}\n", "healthcheck.test must start"},
		{"restart", "services:\n  web:\n    image: x\n    restart: sometimes\n", "services.web.restart"},
		{"rollback of rollback", "services:\n  web:\n    image: x\n    deploy:\n      rollback_config: {failure_action: rollback}\n", "services.web.deploy.rollback_config.failure_action"},
		{"undefined network", "services:\n  web:\n    image: x\n    networks: [nope]\n", "nope"},
		{"missing variable", "services:\n  web:\n    image: ${IMG:?set IMG}\n", "set IMG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml)
			if err == nil || reason.Of(err) != "" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a plain error naming %q", err, tc.want)
			}
		})
	}
}

// TestInterpolation: ${VAR}, defaults and $$ as the environment gives them.
func TestInterpolation(t *testing.T) {
	st, err := load(t, "services:\n  web:\n    image: \"img:${TAG}\"\n    command: [\"${A:-dflt}\", \"$$HOME\"]\n", "TAG=9")
	if err != nil {
		t.Fatal(err)
	}
	s := st.Services[0]
	if s.Image != "img:9" || strings.Join(s.Command, " ") != "dflt $HOME" {
		t.Fatalf("image %q command %q", s.Image, s.Command)
	}
}

// TestExampleLoads keeps examples/compose.yaml a file jaco deploys.
func TestExampleLoads(t *testing.T) {
	st, err := Load(context.Background(), Options{Files: []string{"../../examples/compose.yaml"}, Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Services) != 3 || len(st.Networks) != 2 || len(st.Secrets) != 1 {
		t.Fatalf("got %d services, %d networks, %d secrets; want 3, 2, 1", len(st.Services), len(st.Networks), len(st.Secrets))
	}
}

// TestSmallMappings covers what the golden file cannot show at once:
// restart without deploy.restart_policy, disabled checks, external names.
func TestSmallMappings(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(*api.ServiceSpec) bool
	}{
		{"restart always", "services:\n  web:\n    image: x\n    restart: always\n",
			func(s *api.ServiceSpec) bool {
				return s.Restart.GetCondition() == api.RestartCondition_RESTART_CONDITION_ANY
			}},
		{"restart on-failure:3", "services:\n  web:\n    image: x\n    restart: on-failure:3\n",
			func(s *api.ServiceSpec) bool {
				return s.Restart.GetCondition() == api.RestartCondition_RESTART_CONDITION_ON_FAILURE && s.Restart.GetMaxAttempts() == 3
			}},
		{"restart no", "services:\n  web:\n    image: x\n    restart: \"no\"\n",
			func(s *api.ServiceSpec) bool {
				return s.Restart.GetCondition() == api.RestartCondition_RESTART_CONDITION_NONE
			}},
		{"healthcheck NONE", "services:\n  web:\n    image: x\n    healthcheck: {test: [NONE]}\n",
			func(s *api.ServiceSpec) bool { return s.Health == nil }},
		{"healthcheck disabled", "services:\n  web:\n    image: x\n    healthcheck: {test: [CMD, a], disable: true}\n",
			func(s *api.ServiceSpec) bool { return s.Health == nil }},
		{"external network by name", "services:\n  web:\n    image: x\n    networks: [corp]\nnetworks:\n  corp: {external: true, name: corp-net}\n",
			func(s *api.ServiceSpec) bool { return len(s.Networks) == 1 && s.Networks[0] == "corp-net" }},
		{"external config", "services:\n  web:\n    image: x\n    configs: [c]\nconfigs:\n  c: {external: true}\n",
			func(s *api.ServiceSpec) bool {
				return len(s.Configs) == 1 && s.Configs[0].Name == "c" && s.Configs[0].Target == "/c" && s.Configs[0].Mode == 0o444
			}},
		{"depends_on list", "services:\n  a:\n    image: x\n  web:\n    image: x\n    depends_on: [a]\n",
			func(s *api.ServiceSpec) bool { return len(s.DependsOn) == 1 && s.DependsOn[0] == "st_a" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := load(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			web := st.Services[len(st.Services)-1]
			if web.Name != "st_web" || !tc.check(web) {
				t.Fatalf("spec %v", web)
			}
		})
	}
}
