package main

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api/reason"
)

func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"jaco-0":                 "jaco-0",
		"w😀 é":                   "w😀 é",
		`C:\dir`:                 `C:\dir`,
		"w\x1b[2J\x1b[31mred":    `w\x1b[2J\x1b[31mred`,
		"a\nb\tc\rd\x00":         `a\nb\tc\rd\x00`,
		"evil\u202etxt.exe":      `evil\u202etxt.exe`,
		"bad\xffutf8":            `bad\xffutf8`,
		"replacement \uFFFD ok":  "replacement \uFFFD ok",
		"\u0085next line\u2028x": `\u0085next line\u2028x`,
	} {
		if got := terminalSafe(in); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// A node joined under a name holding escape sequences (before names were
// checked, or through a store restored from such a cluster) shows escaped
// in `jaco node ls`, in its own column.
func TestNodeLsPrintsANameWithEscapesEscaped(t *testing.T) {
	var out bytes.Buffer
	views := []nodeView{{ID: "n1", Hostname: "w\x1b[2J\x1b[31mred\nfake\trow", Role: "worker", Address: "10.0.0.1:7000", Availability: "active"}}
	if err := nodeTable(&out, views); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\t") || strings.Count(got, "\n") != 2 {
		t.Fatalf("node ls printed %q: raw control characters", got)
	}
	lines := strings.Split(got, "\n")
	if fields := strings.Fields(lines[1]); len(fields) < 5 || fields[1] != `w\x1b[2J\x1b[31mred\nfake\trow` || fields[2] != "worker" {
		t.Fatalf("node ls row %q: want the name escaped in the HOSTNAME column", lines[1])
	}
}

// A refusal quoting what a client sent prints escaped too.
func TestFailurePrintsTheSentenceEscaped(t *testing.T) {
	var out bytes.Buffer
	printFailure(&out, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "name \x1b]0;owned\x07 is\nbad"))
	if got, want := out.String(), "error: invalid_spec: name \\x1b]0;owned\\a is\\nbad\n"; got != want {
		t.Fatalf("printed %q, want %q", got, want)
	}
}
