package linearcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func write(client int, key, value string, expect uint64, invoke, ret int64, outcome Outcome, version uint64) Op {
	op := Op{Client: client, Kind: "write", Input: RegisterInput{Key: key, Write: true, Value: value, Expect: expect},
		Invoke: invoke, Return: ret, Outcome: outcome}
	if outcome == OK {
		op.Output = RegisterOutput{Version: version}
	}
	return op
}

func read(client int, key string, invoke, ret int64, value string, version uint64) Op {
	return Op{Client: client, Kind: "read", Input: RegisterInput{Key: key},
		Output: RegisterOutput{Value: value, Version: version}, Invoke: invoke, Return: ret, Outcome: OK}
}

func checkRegisters(t *testing.T, ops []Op) Result {
	t.Helper()
	res, err := CheckRegisters(ops, Options{Label: "seed=7 nemesis=test", Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("CheckRegisters: %v", err)
	}
	return res
}

func TestRegistersStaleReadIsAViolation(t *testing.T) {
	dir := t.TempDir()
	ops := []Op{
		write(0, "web", "a", 0, 0, 10, OK, 1),
		write(0, "web", "b", 1, 20, 30, OK, 2),
		// Begins after "b" was acknowledged, yet sees "a": what a deposed
		// leader answering from its local store does.
		read(1, "web", 40, 50, "a", 1),
	}
	res, err := CheckRegisters(ops, Options{Label: "seed=42 nemesis=pause-leader", Dir: dir})
	if err != nil {
		t.Fatalf("CheckRegisters: %v", err)
	}
	if res.Verdict != Violation || res.OK() {
		t.Fatalf("a stale read passed: %s", res)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], `"web"`) {
		t.Errorf("problems %q do not name the key web", res.Problems)
	}
	s := res.String()
	for _, want := range []string{"seed=42 nemesis=pause-leader", res.HistoryFile, res.VisualizationFile} {
		if want == "" || !strings.Contains(s, want) {
			t.Errorf("result %q does not say %q", s, want)
		}
	}
	if !strings.HasPrefix(res.HistoryFile, dir) || !strings.HasPrefix(res.VisualizationFile, dir) {
		t.Errorf("evidence %s, %s not in %s", res.HistoryFile, res.VisualizationFile, dir)
	}
	data, err := os.ReadFile(res.HistoryFile)
	if err != nil {
		t.Fatalf("history file: %v", err)
	}
	var h struct {
		Label string
		Ops   []map[string]any
	}
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatalf("history file is not JSON: %v", err)
	}
	if h.Label != "seed=42 nemesis=pause-leader" || len(h.Ops) != len(ops) {
		t.Errorf("history file holds label %q and %d ops, want the label and %d ops", h.Label, len(h.Ops), len(ops))
	}
	if html, err := os.ReadFile(res.VisualizationFile); err != nil || !strings.Contains(string(html), "<html") {
		t.Errorf("visualization file unreadable or not HTML: %v", err)
	}
}

func TestRegistersViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []Op
	}{
		{"read with the right value at the wrong version", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			read(1, "web", 20, 30, "a", 5),
		}},
		{"two writes succeed from the same version", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(1, "web", "b", 1, 20, 30, OK, 2),
			write(2, "web", "c", 1, 40, 50, OK, 3),
		}},
		{"an acknowledged write of unknown version was lost", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 30, OK, 0),
			read(1, "web", 40, 50, "a", 1),
		}},
		{"a refused write was applied", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(1, "web", "b", 1, 20, 30, Refused, 0),
			read(2, "web", 40, 50, "b", 2),
		}},
		{"reads go backwards", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 60, OK, 2),
			read(1, "web", 25, 30, "b", 2),
			read(2, "web", 40, 50, "a", 1),
		}},
		{"a value nobody wrote", []Op{
			read(0, "web", 0, 10, "x", 9),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkRegisters(t, tc.ops); res.Verdict != Violation {
				t.Fatalf("passed: %s", res)
			}
		})
	}
}

func TestRegistersValidHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []Op
	}{
		{"a read concurrent with a write sees the old value", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 40, OK, 2),
			read(1, "web", 15, 30, "a", 1),
		}},
		{"a read concurrent with a write sees the new value", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 40, OK, 2),
			read(1, "web", 15, 30, "b", 2),
			read(2, "web", 50, 60, "b", 2),
		}},
		{"an unknown write that took effect", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 30, Unknown, 0),
			read(1, "web", 40, 50, "b", 7),
			write(1, "web", "c", 7, 60, 70, OK, 8),
			read(2, "web", 80, 90, "c", 8),
		}},
		{"an unknown write that took effect and a write from its version", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 30, Unknown, 0),
			write(1, "web", "c", 2, 40, 50, OK, 3),
		}},
		{"an unknown write that did not take effect", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 30, Unknown, 0),
			read(1, "web", 40, 50, "a", 1),
			write(1, "web", "c", 1, 60, 70, OK, 4),
			read(2, "web", 80, 90, "c", 4),
		}},
		{"an unknown write that takes effect long after it was sent", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 30, Unknown, 0),
			read(1, "web", 40, 50, "a", 1),
			read(1, "web", 60, 70, "b", 9),
		}},
		{"an acknowledged write whose version a read reveals", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(0, "web", "b", 1, 20, 30, OK, 0),
			read(1, "web", 40, 50, "b", 5),
			write(1, "web", "c", 5, 60, 70, OK, 6),
		}},
		{"refused operations are left out", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(1, "web", "b", 9, 20, 30, Refused, 0),
			{Client: 2, Kind: "read", Input: RegisterInput{Key: "web"}, Invoke: 20, Return: 30, Outcome: Unknown},
			read(2, "web", 40, 50, "a", 1),
		}},
		{"independent keys", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			write(1, "db", "x", 0, 5, 15, OK, 2),
			read(2, "db", 20, 30, "x", 2),
			read(2, "web", 31, 40, "a", 1),
		}},
		{"ops of another workload are ignored", []Op{
			write(0, "web", "a", 0, 0, 10, OK, 1),
			{Client: 1, Kind: "add", Input: SetAdd{Element: "e"}, Invoke: 0, Return: 5, Outcome: OK},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkRegisters(t, tc.ops); !res.OK() {
				t.Fatalf("a valid history failed: %s", res)
			}
		})
	}
}

func TestRegistersViolationNamesOnlyTheBrokenKey(t *testing.T) {
	res := checkRegisters(t, []Op{
		write(0, "web", "a", 0, 0, 10, OK, 1),
		write(0, "web", "b", 1, 20, 30, OK, 2),
		read(1, "web", 40, 50, "a", 1),
		write(2, "db", "x", 0, 0, 10, OK, 3),
		read(2, "db", 40, 50, "x", 3),
	})
	if res.Verdict != Violation || len(res.Problems) != 1 || !strings.Contains(res.Problems[0], `"web"`) {
		t.Fatalf("want one problem naming web, got %s", res)
	}
}

// TestRegistersSearchIsBounded gives porcupine a history whose refutation
// needs every subset of 24 concurrent unknown writes, and a 50 ms budget:
// the check must come back inconclusive, with its evidence, in time.
func TestRegistersSearchIsBounded(t *testing.T) {
	ops := []Op{write(0, "web", "a", 0, 0, 10, OK, 1)}
	for i := range 24 {
		ops = append(ops, write(1+i, "web", fmt.Sprintf("v%d", i), 1, 20, 30, Unknown, 0))
	}
	ops = append(ops, read(99, "web", 40, 50, "never-written", 3))
	dir := t.TempDir()
	start := time.Now()
	res, err := CheckRegisters(ops, Options{Label: "bounded", Dir: dir, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("CheckRegisters: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("a 50 ms check took %s", took)
	}
	// 2^24 subsets cannot be searched in 50 ms: anything but
	// inconclusive means the timeout was not applied.
	if res.Verdict != Inconclusive {
		t.Fatalf("want inconclusive, got %s", res)
	}
	if res.HistoryFile == "" || res.VisualizationFile == "" {
		t.Errorf("an inconclusive check wrote no evidence: %s", res)
	}
}
