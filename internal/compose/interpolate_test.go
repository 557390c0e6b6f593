package compose

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loadBeside writes yaml as compose.yaml and each of files beside it, and
// loads it with env.
func loadBeside(t *testing.T, yaml string, files map[string]string, env ...string) (*Stack, error) {
	t.Helper()
	dir := t.TempDir()
	files["compose.yaml"] = yaml
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Load(context.Background(), Options{Files: []string{filepath.Join(dir, "compose.yaml")}, Name: "st", Env: env})
}

// TestInterpolationAsDockerStackDeploy: every value below is what docker
// stack deploy (CLI 28.2.2, engine 20.10) put in the service's
// environment for the same file and environment, quirks included
// (interpolate.go), but the one jaco refuses: a missing required variable
// before another reference (TestDockerSubstitute).
func TestInterpolationAsDockerStackDeploy(t *testing.T) {
	cases := []struct{ key, ref, want string }{
		{"PLAIN", "${PLAIN}", ""},
		{"DEF", "${DEF_UNSET:-fallback}", "fallback"},
		{"DEFEMPTY", "${DEF_EMPTY:-fallback2}", "fallback2"},
		{"DASH", "${DASH_EMPTY-dashdefault}", ""},
		{"DASHUNSET", "${DASH_UNSET-dashdefault}", "dashdefault"},
		{"ESC", "$$NOTVAR and $${BRACED}", "$NOTVAR and ${BRACED}"},
		{"NESTED", "${UNSET_A:-${OTHER:-deep}}", "${OTHER:-deep}"},
		{"REQC", "${REQC:?needs REQC}", "q"},
		{"Q", "${QEMPTY?must be set}", ""},
		{"SUFFIX", "$SETV-suffix", "s"},
		{"SUFFIX2", "${SETV}-suffix", "s-suffix"},
		{"HYPHENMSG", "${UNSETQ:?must-be-set}", "be-set"},
		{"LOWER", "${lowerv}", "low"},
		{"COLONQ", "${UNSETQ2:?no hyphen msg here but:- yes}", " yes"},
		{"MIXED", "pre${SETV}post$$x", "prespost$x"},
		{"BARE", "$SETV", "s"},
		{"FROMDOTENV", "${DOTENV_ONLY:-not from .env}", "not from .env"},
	}
	yaml := "services:\n  web:\n    image: x\n    environment:\n"
	var want []string
	for _, c := range cases {
		yaml += "      " + c.key + ": '" + c.ref + "'\n"
		want = append(want, c.key+"="+c.want)
	}
	slices.Sort(want)
	st, err := loadBeside(t, yaml, map[string]string{".env": "DOTENV_ONLY=from-dotenv\nPLAIN=from-dotenv\n"},
		"SETV=s", "lowerv=low", "REQC=q", "QEMPTY=", "DEF_EMPTY=", "DASH_EMPTY=")
	if err != nil {
		t.Fatal(err)
	}
	// Compared as sets: jaco orders the environment by key.
	if got := slices.Sorted(slices.Values(st.Services[0].Env)); !slices.Equal(got, want) {
		t.Fatalf("environment\n%q\nwant\n%q", got, want)
	}
}

// TestInterpolationRefusedAsDockerStackDeploy: what docker stack deploy
// refused is refused, naming the key; a .env beside the file defines
// nothing, not even a required variable.
func TestInterpolationRefusedAsDockerStackDeploy(t *testing.T) {
	for _, tc := range []struct{ name, ref, env, want string }{
		{"alternative", "${SETV:+alternative}", "SETV=s", "invalid interpolation format for services.web.environment.V"},
		{"alternative if set", "${UNSETV+alt2}", "", "invalid interpolation format for services.web.environment.V"},
		{"lone dollar", "a$ b", "", "invalid interpolation format for services.web.environment.V"},
		{"required empty", "${REQC:?needs REQC}", "REQC=", "required variable REQC is missing a value: needs REQC"},
		{"required unset", "${REQ?need REQ}", "", "required variable REQ is missing a value: need REQ"},
		{"required only in .env", "${DOTREQ:?set DOTREQ}", "", "required variable DOTREQ is missing a value: set DOTREQ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "services:\n  web:\n    image: x\n    environment:\n      V: '" + tc.ref + "'\n"
			_, err := loadBeside(t, yaml, map[string]string{".env": "DOTREQ=from-dotenv\n"}, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestDockerSubstitute checks the substitution alone, where the error
// rules are plainest: only the last reference's outcome counts.
func TestDockerSubstitute(t *testing.T) {
	env := map[string]string{"A": "a", "E": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		in, want string
		fails    bool
	}{
		{"$A${A}$$", "aa$", false},
		// docker deploys this with X empty; jaco refuses it.
		{"${X:?x} $A", "", true},
		{"$A ${X:?x}", "", true},
		{"${E?e}", "", false},
		{"${E:?e}", "", true},
		{"$", "", true},
		{"${A:+b}", "", true},
		{"$A:-b", "a", false},
		{"$X:-b}", "b}", false},
	} {
		got, err := dockerSubstitute(tc.in, lookup)
		if (err != nil) != tc.fails || !tc.fails && got != tc.want {
			t.Errorf("%q: got %q, %v; want %q, failing %v", tc.in, got, err, tc.want, tc.fails)
		}
	}
}
