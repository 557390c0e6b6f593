package launchdir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

// TestExample: the shipped example loads, db before web.
func TestExample(t *testing.T) {
	cfg, err := Load("../../examples/launch")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Services) != 2 || cfg.Services[0].Name != "db" || cfg.Services[1].Name != "web" {
		t.Fatalf("services %v, want db then web", cfg.Services)
	}
	db, web := cfg.Services[0].Spec, cfg.Services[1].Spec
	if db.Replicas != 1 || db.Bundle.PrepareStartLimit != 5 || db.StopGracePeriod.AsDuration() != 30*time.Second ||
		db.AbortGracePeriod.AsDuration() != 5*time.Second || db.Restart.MaxAttempts != 5 ||
		db.Restart.Condition != api.RestartCondition_RESTART_CONDITION_ON_FAILURE {
		t.Errorf("db spec %v", db)
	}
	for _, h := range []string{"prepare", "launch", "cleanup"} {
		if len(db.Bundle.Files[h]) == 0 {
			t.Errorf("db's %s hook was not read", h)
		}
	}
	if web.Replicas != 2 || !slices.Equal(web.DependsOn, []string{"db"}) ||
		!slices.Equal(web.Placement.Spread, []string{"node.labels.zone"}) || !slices.Equal(web.Env, []string{"PORT=8080"}) {
		t.Errorf("web spec %v", web)
	}
}

// writeConfig makes a configuration from path -> content ("" for an
// empty file); hooks are written executable.
func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if slices.Contains(api.HookNames, filepath.Base(p)) {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const launch = "#!/bin/sh\nexec sleep 100\n"

// TestInvalid: every problem names its file, and its line when it has one.
func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"unknown key", map[string]string{"a/service": "replicas = 1\n\n# c\nreplica = 2\n", "a/launch": launch},
			[]string{`a/service:4: unknown key "replica"`}},
		{"bad replicas", map[string]string{"a/service": "replicas = two\n", "a/launch": launch},
			[]string{"a/service:1: replicas = two: want a whole number"}},
		{"bad duration", map[string]string{"a/service": "launch.shutdown_grace_period = soon\n", "a/launch": launch},
			[]string{"a/service:1: launch.shutdown_grace_period = soon: want a duration"}},
		{"negative duration", map[string]string{"a/service": "restart.delay = -1s\n", "a/launch": launch},
			[]string{"a/service:1: restart.delay = -1s"}},
		{"twice", map[string]string{"a/service": "mode = global\nmode = replicated\n", "a/launch": launch},
			[]string{"a/service:2: mode is set twice (first on line 1)"}},
		{"no equals", map[string]string{"a/service": "replicas 3\n", "a/launch": launch},
			[]string{`a/service:1: want key = value, not "replicas 3"`}},
		{"empty value", map[string]string{"a/service": "mode =\n", "a/launch": launch},
			[]string{"a/service:1: mode has no value"}},
		{"bad constraint", map[string]string{"a/service": "constraint = node.colour==red\n", "a/launch": launch},
			[]string{`a/service:1: constraint = node.colour==red: attribute "node.colour"`}},
		{"bad health", map[string]string{"a/service": "health = http\n", "a/launch": launch},
			[]string{"a/service:1: health = http: want notify"}},
		{"health settings alone", map[string]string{"a/service": "\nhealth.interval = 5s\n", "a/launch": launch},
			[]string{"a/service:2: health settings without health = notify"}},
		{"notify without interval", map[string]string{"a/service": "# okay messages\nhealth = notify\n", "a/launch": launch},
			[]string{"a/service:2: health = notify needs health.interval above 0"}},
		{"global with replicas", map[string]string{"a/service": "replicas = 2\nmode = global\n", "a/launch": launch},
			[]string{"a/service:1: replicas does not apply to mode = global"}},
		{"jaco env", map[string]string{"a/service": "env = JACO_NAMESPACE_ID=x\n", "a/launch": launch},
			[]string{"a/service:1: env = JACO_NAMESPACE_ID=x: JACO_ variables are set by jaco"}},
		{"missing launch", map[string]string{"a/service": "", "a/prepare": launch},
			[]string{"a/launch: missing"}},
		{"missing service file", map[string]string{"a/launch": launch},
			[]string{"a/service: missing"}},
		{"unknown file", map[string]string{"a/service": "", "a/launch": launch, "a/README": "x"},
			[]string{"a/README: unknown file"}},
		{"file at the top", map[string]string{"a/service": "", "a/launch": launch, "notes.txt": "x"},
			[]string{"notes.txt: not a service directory"}},
		{"bad directory name", map[string]string{"Web/service": "", "Web/launch": launch},
			[]string{"Web: a service directory's name"}},
		{"unknown dependency", map[string]string{"a/service": "depends_on = b\n", "a/launch": launch},
			[]string{"a/service: depends_on b: the configuration has no service b"}},
		{"cycle", map[string]string{"a/service": "depends_on = b\n", "a/launch": launch, "b/service": "depends_on = a\n", "b/launch": launch},
			[]string{"a/service: dependency cycle: a -> b -> a"}},
		{"every problem", map[string]string{"a/service": "replicas = x\n", "a/launch": launch, "b/service": "mode = sideways\n"},
			[]string{"a/service:1: replicas = x", "b/launch: missing", "b/service:1: mode = sideways"}},
		{"empty", map[string]string{}, []string{".: no service directories"}},
		{"too big", map[string]string{"a/service": "", "a/launch": launch, "a/prepare": "#!/bin/sh\n#" + strings.Repeat("x", MaxHookBytes)},
			[]string{"a: the hooks hold 1048612 bytes; the limit is 1048576"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, tc.files)
			cfg, err := Load(dir)
			var inv *Invalid
			if !errors.As(err, &inv) || cfg != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load: %v, %v; want an *Invalid and no configuration", cfg, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if len(inv.Problems) != len(tc.want) {
				t.Errorf("%d problems %v, want %d", len(inv.Problems), inv.Problems, len(tc.want))
			}
		})
	}
}

// TestNotExecutable: a hook without an execute bit would fail on every
// node; it is refused here.
func TestNotExecutable(t *testing.T) {
	dir := writeConfig(t, map[string]string{"a/service": ""})
	if err := os.WriteFile(filepath.Join(dir, "a", "launch"), []byte(launch), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "a/launch: a hook must be executable") {
		t.Errorf("Load: %v, want a/launch refused as not executable", err)
	}
}

func TestMissingDirIsNotInvalid(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	if err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("Load of a missing directory: %v, want a read error, not an *Invalid", err)
	}
}

func TestSettings(t *testing.T) {
	dir := writeConfig(t, map[string]string{
		"a/service": "mode = global\nconstraint = node.role == worker\nconstraint=node.labels.disk!=hdd\nspread = node.labels.rack\n" +
			"health = notify\nhealth.interval = 5s\nhealth.retries = 2\ndepends_on = b, c\n",
		"a/launch": launch, "b/service": "", "b/launch": launch, "c/service": "", "c/launch": launch,
	})
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range cfg.Services {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"b", "c", "a"}) {
		t.Errorf("order %v, want dependencies first", names)
	}
	a := cfg.Services[2].Spec
	if a.Mode != api.ServiceMode_SERVICE_MODE_GLOBAL || a.Replicas != 0 ||
		!slices.Equal(a.Placement.Constraints, []string{"node.role==worker", "node.labels.disk!=hdd"}) ||
		!slices.Equal(a.Placement.Spread, []string{"node.labels.rack"}) {
		t.Errorf("spec %v", a)
	}
	if a.Health.GetNotify() == nil || a.Health.Interval.AsDuration() != 5*time.Second || a.Health.Retries != 2 {
		t.Errorf("health %v, want notify every 5s, 2 retries", a.Health)
	}
}
