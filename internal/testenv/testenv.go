// Package testenv decides what a test does when this machine lacks
// something it needs (root, a Debian package): on a developer's machine it
// skips, and where everything is installed on purpose — scripts/test.sh,
// which CI runs, sets JACO_TEST_STRICT=1 — it fails, so that CI can never
// pass by skipping.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// StrictEnv is the variable that turns skips into failures.
const StrictEnv = "JACO_TEST_STRICT"

// SkipOrFail skips t, or fails it under StrictEnv, saying why.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(StrictEnv) != "" {
		t.Fatalf("%s (%s is set: this run must have everything the tests need)", msg, StrictEnv)
	}
	t.Skip(msg)
}
