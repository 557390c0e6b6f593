package node

import (
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/node/keyring"
)

// lockedManager inits a cluster on dir, turns autolock on, waits until the
// keys are sealed and restarts the daemon, which comes back locked. It
// returns the restarted node and the unlock key.
func lockedManager(t *testing.T, dir string) (*Node, string) {
	t.Helper()
	n, stop := startNode(t, dir)
	c := localClient(t, dir)
	if _, err := c.Cluster.Init(ctxT(t), &api.InitClusterRequest{}); err != nil {
		t.Fatal(err)
	}
	on := true
	resp, err := c.Control.UpdateCluster(ctxT(t), &api.UpdateClusterRequest{Autolock: &on})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n.keys.UnlockKey() == nil || !n.keys.Settled() {
		if time.Now().After(deadline) {
			t.Fatal("keys not sealed 30 s after autolock was turned on")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	n2, _ := startNode(t, dir)
	if n2.State() != api.NodeState_NODE_STATE_LOCKED {
		t.Fatalf("restarted manager is %v, want locked", n2.State())
	}
	return n2, resp.UnlockKey
}

// TestUnlockRateLimited: the first wrong unlock keys are refused
// permission_denied at once; after keyring.FreeUnlockAttempts of them
// every attempt, the right key included, is refused rate_limited until
// the delay has passed, so keys cannot be tried at the speed of the
// socket; after the delay the right key opens the manager (docs/adr/0023).
func TestUnlockRateLimited(t *testing.T) {
	dir := t.TempDir()
	n, key := lockedManager(t, dir)
	c := localClient(t, dir)
	unlock := func(k string) error {
		_, err := c.Node.Unlock(ctxT(t), &api.UnlockNodeRequest{UnlockKey: k})
		return err
	}
	wrong, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= keyring.FreeUnlockAttempts; i++ {
		if got := reason.Of(unlock(encryption.FormatUnlockKey(wrong))); got != reason.PermissionDenied {
			t.Fatalf("wrong key #%d: reason %q, want permission_denied", i, got)
		}
	}
	for _, k := range []string{encryption.FormatUnlockKey(wrong), key} {
		err := unlock(k)
		if got := reason.Of(err); got != reason.RateLimited || !strings.Contains(err.Error(), "next attempt") {
			t.Fatalf("attempt after %d wrong keys: %v (reason %q), want rate_limited naming when to retry", keyring.FreeUnlockAttempts, err, got)
		}
	}
	if n.State() != api.NodeState_NODE_STATE_LOCKED {
		t.Fatalf("state %v after refused attempts, want locked", n.State())
	}
	if got := n.keys.FailedUnlocks(); got != keyring.FreeUnlockAttempts {
		t.Fatalf("failed unlock attempts %d, want %d (refusals for the delay are not attempts)", got, keyring.FreeUnlockAttempts)
	}

	deadline := time.Now().Add(keyring.FirstUnlockDelay + 10*time.Second)
	for {
		err := unlock(key)
		if err == nil {
			break
		}
		if reason.Of(err) != reason.RateLimited || time.Now().After(deadline) {
			t.Fatalf("right key after the delay: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n.State() != api.NodeState_NODE_STATE_READY {
		t.Fatalf("state %v after unlock, want ready", n.State())
	}
}
