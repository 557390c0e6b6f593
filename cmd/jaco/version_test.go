package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/internal/buildinfo"
)

// jaco version and jaco --version print the build, without a daemon.
func TestVersion(t *testing.T) {
	want := buildinfo.Read().Format("jaco")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != 0 || stdout.String() != want {
			t.Errorf("jaco %v: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout.String(), stderr.String(), want)
		}
	}
}
