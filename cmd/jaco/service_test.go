package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs jaco against a data dir with no daemon: a command that got
// as far as dialling fails unavailable (1), so exit 2 shows it was refused
// before contacting anything.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"--data-dir", t.TempDir(), "--timeout", "1s"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stderr.String()
}

func TestScaleRefusesWhatIsNotACount(t *testing.T) {
	for _, arg := range []string{"web=3abc", "web=0x2", "web=1 2", "web=-1", "web=", "web=+1", "web=1.5", "web", "=3", "web=99999999999999999999"} {
		code, stderr := runCLI(t, "service", "scale", arg)
		if code != 2 || !strings.Contains(stderr, "error: usage:") {
			t.Errorf("scale %q: exit %d, stderr %q; want 2 with a usage error", arg, code, stderr)
		}
	}
	if code, stderr := runCLI(t, "service", "scale", "web=3", "db=x"); code != 2 {
		t.Errorf("scale web=3 db=x: exit %d (%s), want 2 before scaling web", code, stderr)
	}
	if code, stderr := runCLI(t, "service", "scale", "web=3", "web=4"); code != 2 {
		t.Errorf("scale naming web twice: exit %d (%s), want 2", code, stderr)
	}
}

func TestParseScaleTakesSeveral(t *testing.T) {
	got, err := parseScale([]string{"web=3", "db=0", "api=010"})
	if err != nil {
		t.Fatal(err)
	}
	want := []scaleArg{{"web", 3}, {"db", 0}, {"api", 10}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("arg %d: %v, want %v", i, got[i], want[i])
		}
	}
	// A well-formed scale gets as far as the daemon (none here).
	if code, _ := runCLI(t, "service", "scale", "web=3"); code != 1 {
		t.Errorf("scale web=3 without a daemon: exit %d, want 1 (unavailable)", code)
	}
}

// A rollback returns to the previous spec: a change beside it would be
// lost, so it is refused as a usage error.
func TestUpdateRollbackTakesNoChange(t *testing.T) {
	for _, args := range [][]string{
		{"service", "update", "web", "--rollback", "--image", "x"},
		{"service", "update", "web", "--rollback", "-e", "A=1"},
		{"service", "update", "web", "--rollback", "--force"},
		{"service", "update", "web", "--rollback", "--", "sh"},
	} {
		if code, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, stderr)
		}
	}
	if code, _ := runCLI(t, "service", "update", "web", "--rollback", "-d"); code != 1 {
		t.Errorf("update --rollback -d without a daemon: exit %d, want 1 (it got as far as dialling)", code)
	}
	if code, _ := runCLI(t, "service", "rollback", "web", "a"); code != 2 {
		t.Errorf("rollback with two services: exit %d, want 2", code)
	}
}
