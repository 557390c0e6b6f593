package node

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// waitingForInitLock is a condition: a goroutine of fn waits for initMu.
func waitingForInitLock(fn string) func() error {
	return func() error {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "sync.(*Mutex).Lock") && strings.Contains(g, fn) {
				return nil
			}
		}
		return fmt.Errorf("no goroutine of %s waits for initMu", fn)
	}
}

// An init that arrives while the daemon stops must not hold the stop up
// (the servers' graceful stop waits for every call, and the init would
// wait for the stop), nor run: it is refused as unavailable and leaves
// the node uninitialized. The test holds initMu while both queue for it,
// the stop first, as a role change in progress would.
func TestStopIsNotHeldByAnInitArrivingDuringIt(t *testing.T) {
	dir := t.TempDir()
	n, stop := startNode(t, dir)
	c := localClient(t, dir)
	n.initMu.Lock()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		stop()
	}()
	waitfor.Eventually(t, 10*time.Second, waitingForInitLock("node.(*Node).Stop"))
	inited := make(chan error, 1)
	go func() {
		_, err := c.Cluster.Init(ctxT(t), &api.InitClusterRequest{})
		inited <- err
	}()
	waitfor.Eventually(t, 10*time.Second, waitingForInitLock("formation.(*Former).Init"))
	n.initMu.Unlock()

	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the stop did not end within 20 s of the init lock's release")
	}
	if err := <-inited; reason.Of(err) != reason.Unavailable {
		t.Errorf("init during the stop: reason %q (%v), want unavailable", reason.Of(err), err)
	}
	if n.initialized() {
		t.Error("the node is initialized after an init refused during its stop")
	}
}
