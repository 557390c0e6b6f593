package integration

import (
	"os"
	"testing"
)

// TestLocalSocketIsOwnerOnly: the unix socket is trusted without a token
// (docs/design.md §10), so whoever can connect to it administers the cluster.
// Only the daemon's user may, before and after init and across restarts
// (each start makes the socket anew).
func TestLocalSocketIsOwnerOnly(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "sock")
	check := func(when string) {
		t.Helper()
		info, err := os.Stat(d.socket())
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: socket mode %v, want a socket with mode 0600", when, info.Mode())
		}
	}
	check("fresh daemon")
	d.initQuiet()
	check("after init")
	d.restart()
	check("after restart")
}
