package linearcheck

import (
	"os"
	"strings"
	"testing"
)

func add(client int, element string, outcome Outcome) Op {
	return Op{Client: client, Kind: "add", Input: SetAdd{Element: element}, Outcome: outcome}
}

func TestSetViolations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   []Op
		final []string
		want  string
	}{
		{"lost acknowledged add", []Op{add(0, "a", OK), add(1, "b", OK)}, []string{"a"}, `lost: acknowledged add "b"`},
		{"duplicate", []Op{add(0, "a", OK)}, []string{"a", "a"}, `duplicate: "a" is present 2 times`},
		{"duplicate of an unknown add", []Op{add(0, "a", Unknown)}, []string{"a", "a"}, `duplicate: "a"`},
		{"never sent", []Op{add(0, "a", OK)}, []string{"a", "z"}, `phantom: "z" is present but was never sent`},
		{"refused but present", []Op{add(0, "a", Refused)}, []string{"a"}, `phantom: "a" is present but its add was refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, err := CheckSet(tc.ops, tc.final, Options{Label: "seed=3", Dir: dir})
			if err != nil {
				t.Fatalf("CheckSet: %v", err)
			}
			if res.Verdict != Violation {
				t.Fatalf("passed: %s", res)
			}
			if !strings.Contains(strings.Join(res.Problems, "\n"), tc.want) {
				t.Errorf("problems %q do not say %q", res.Problems, tc.want)
			}
			if !strings.Contains(res.String(), "seed=3") {
				t.Errorf("result %q does not name the label", res)
			}
			if data, err := os.ReadFile(res.HistoryFile); err != nil || !strings.Contains(string(data), `"final"`) {
				t.Errorf("history file %q missing or without the final content: %v", res.HistoryFile, err)
			}
		})
	}
}

func TestSetValid(t *testing.T) {
	ops := []Op{
		add(0, "a", OK),
		add(1, "b", OK),
		add(2, "maybe-in", Unknown),
		add(2, "maybe-out", Unknown),
		add(3, "refused", Refused),
		write(4, "web", "x", 0, 0, 1, OK, 1), // another workload: ignored
	}
	res, err := CheckSet(ops, []string{"b", "maybe-in", "a"}, Options{Label: "seed=3", Dir: t.TempDir()})
	if err != nil || !res.OK() {
		t.Fatalf("a valid set failed: %s (%v)", res, err)
	}
	if res.HistoryFile != "" {
		t.Errorf("a passing check wrote %s", res.HistoryFile)
	}
}
