package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeJacod puts in PATH a jacod that prints its arguments and the line
// it reads from stdin, complains on stderr and exits with code.
func fakeJacod(t *testing.T, code string) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\"\nread -r line\necho \"stdin: $line\"\necho 'jacod: error: failed: no' >&2\nexit " + code + "\n"
	if err := os.WriteFile(filepath.Join(dir, "jacod"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

// jaco restore is jacod restore: the operator's arguments, jaco's data
// dir, the backup key on stdin and jacod's exit status all pass through,
// and jaco adds no error line of its own to jacod's.
func TestRestoreRunsJacod(t *testing.T) {
	fakeJacod(t, "1")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--data-dir", "/srv/jaco", "restore", "--advertise-addr", "10.0.0.1:7000", "--node-name", "m1", "--", "-backup"},
		strings.NewReader("JBK1-key\n"), &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want jacod's 1", code)
	}
	want := "restore\n--data-dir\n/srv/jaco\n--advertise-addr\n10.0.0.1:7000\n--node-name\nm1\n--\n-backup\nstdin: JBK1-key\n"
	if stdout.String() != want {
		t.Errorf("jacod saw:\n%s\nwant:\n%s", stdout.String(), want)
	}
	if stderr.String() != "jacod: error: failed: no\n" {
		t.Errorf("stderr %q, want jacod's line alone", stderr.String())
	}

	fakeJacod(t, "2")
	if code := run([]string{"restore", "f"}, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want jacod's 2", code)
	}
}

func TestRestoreWithoutJacod(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run([]string{"restore", "f", "--advertise-addr", "10.0.0.1:7000"}, strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "no jacod next to jaco") || !strings.Contains(stderr.String(), "PATH") {
		t.Errorf("exit %d, stderr %q; want 1 and where jacod was looked for", code, stderr.String())
	}
}
