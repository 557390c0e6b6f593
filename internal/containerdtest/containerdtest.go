package containerdtest

import (
	"context"
	"os"
	"testing"

	"github.com/jaco-project/jaco/internal/testenv"
)

// Start starts a private containerd for t under t.TempDir() and stops it
// (with the cleanup Stop describes) when t ends. Not run as root, it skips
// t (fails it under testenv.StrictEnv, as CI runs): containerd and runc
// need root.
func Start(t testing.TB) *Daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "containerd needs root")
	}
	d, err := StartDaemon(context.Background(), t.TempDir())
	if err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stop containerd: %v", err)
		}
	})
	return d
}
