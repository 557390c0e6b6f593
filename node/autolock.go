package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager"
	"github.com/jaco-project/jaco/manager/encryption"
)

// Autolock on a manager (docs/adr/0012). The cluster object says whether
// autolock is on and holds the unlock key; each manager brings its own
// files in line with it (reconcileAutolock), and a manager restarted with
// sealed data keys waits in the locked state for unlock.

// nodeService serves NodeService on the local socket.
type nodeService struct {
	api.UnimplementedNodeServiceServer
	n *Node
}

func (s nodeService) Unlock(_ context.Context, req *api.UnlockNodeRequest) (*api.UnlockNodeResponse, error) {
	return s.n.unlock(req.UnlockKey)
}

// unlock opens a locked manager with the unlock key and starts it. A wrong
// key changes nothing and is counted, and after a few wrong keys further
// attempts wait (unlocklimit.go); an unlocked node answers its state.
func (n *Node) unlock(text string) (*api.UnlockNodeResponse, error) {
	unlock, err := n.lockInit()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if n.State() != api.NodeState_NODE_STATE_LOCKED {
		return &api.UnlockNodeResponse{State: n.State()}, nil
	}
	if err := n.unlockRateLimited(); err != nil {
		return nil, err
	}
	kek, err := encryption.ParseUnlockKey(text)
	if err != nil {
		failed := n.unlockFailed()
		return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "%v (failed unlock attempts: %d)", err, failed)
	}
	if _, err := encryption.ReadKeyFile(n.cfg.dekPath(), &kek); err != nil {
		if !errors.Is(err, encryption.ErrLocked) {
			return nil, internalError(err)
		}
		failed := n.unlockFailed()
		n.log.Warn("wrong unlock key refused", "failed_attempts", failed)
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied,
			"this unlock key does not open this manager's data key (failed unlock attempts: %d); "+
				"a manager that was down when the key was rotated opens with the previous key", failed)
	}
	n.kek.Store(&kek)
	if err := n.startUnlocked(); err != nil {
		if n.Manager() == nil { // nothing started: still locked
			n.kek.Store(nil)
		}
		return nil, internalError(fmt.Errorf("unlocked, but could not start: %w", err))
	}
	n.log.Info("unlocked: manager started")
	return &api.UnlockNodeResponse{State: n.State()}, nil
}

// startUnlocked does for an unlocked manager what New does for one whose
// keys are in clear. Until the manager starts, the node stays locked.
func (n *Node) startUnlocked() error {
	if _, _, _, err := n.loadNodeFiles(); err != nil {
		return err
	}
	if n.cfg.ForceNewCluster {
		if err := n.forceNewCluster(); err != nil {
			return err
		}
	}
	if err := n.startManager(); err != nil {
		return err
	}
	if err := n.reloadTLS(); err != nil {
		return err
	}
	n.kickAutolock()
	return n.startAgent()
}

// runAutolockLoop reconciles the files of the manager of now with the
// cluster's autolock setting: at once when a manager starts (startManager
// kicks it), whenever the cluster object changes, and every
// RoleCheckInterval (a failed attempt to retry). It waits while the node
// runs no manager.
func (n *Node) runAutolockLoop(ctx context.Context) {
	for ctx.Err() == nil {
		m := n.Manager()
		if m == nil {
			select {
			case <-ctx.Done():
			case <-n.autolockKick:
			}
			continue
		}
		n.kickAutolock() // a manager new to this loop: reconcile now
		// Returns when ctx ends or m stops (its watch closes).
		n.runLoop(ctx, loop{interval: n.cfg.RoleCheckInterval, kick: n.autolockKick, wake: m.WatchCluster(ctx),
			failMsg: "autolock: bringing this manager's keys in line failed; retrying",
			step:    func(ctx context.Context) error { return n.reconcileAutolock(ctx, m) }})
	}
}

func (n *Node) kickAutolock() { kick(n.autolockKick) }

// reconcileAutolock seals this manager's data keys with the cluster's
// unlock key (or writes them in clear when autolock is off). When the keys
// were in clear before, the data key is rotated first: the raft log and
// snapshots are rewritten under a new data key, so nothing written while
// the old one lay on disk in clear stays readable. The steps, each durable
// before the next, leave a restartable node at every point:
//
//  1. data keys {new, old} written under the unlock key;
//  2. TLS key sealed with the new data key;
//  3. raft state rewritten under the new data key (Manager.Rekey);
//  4. data keys {new} written: the old key is gone.
//
// A node found with two data keys (a rotation cut short) resumes at 2.
func (n *Node) reconcileAutolock(ctx context.Context, m *manager.Manager) error {
	unlock, err := n.lockInit()
	if err != nil {
		return err
	}
	defer unlock()
	if n.Manager() != m || n.State() == api.NodeState_NODE_STATE_LOCKED {
		return nil // m stopped meanwhile (demotion, shutdown)
	}
	c := m.Cluster()
	if c == nil {
		return nil
	}
	var want *encryption.Key
	if c.Autolock && len(c.UnlockKey) == encryption.KeySize {
		want = new(encryption.Key)
		copy(want[:], c.UnlockKey)
	}
	have := n.unlockKey()
	if sameKey(want, have) && n.keysSettled.Load() {
		return nil
	}
	keys, err := n.dataKeys()
	if err != nil {
		return err
	}
	if want == nil && have == nil && len(keys.Previous) == 0 && !n.nodeKeySealed() {
		n.keysSettled.Store(true) // autolock off, files in clear: nothing to do
		return nil
	}
	if want != nil && have == nil {
		old := keys.Current
		if keys.Current, err = encryption.NewKey(); err != nil {
			return err
		}
		keys.Previous = append([]encryption.Key{old}, keys.Previous...)
	}
	n.kek.Store(want)
	if err := n.writeDataKeys(keys); err != nil {
		n.kek.Store(have)
		return err
	}
	// From here the files are under want: a failure below is retried by
	// the next pass, which finds the rotation still pending.
	n.keysSettled.Store(false)
	caPEM, certPEM, keyPEM, err := n.loadNodeFiles()
	if err != nil {
		return err
	}
	if err := n.saveNodeFiles(caPEM, certPEM, keyPEM); err != nil {
		return err
	}
	if err := n.resealOverlayKey(); err != nil {
		return fmt.Errorf("reseal the overlay key: %w", err)
	}
	if len(keys.Previous) > 0 {
		sealer, err := keys.Sealer()
		if err != nil {
			return err
		}
		if err := m.Rekey(ctx, sealer); err != nil {
			return fmt.Errorf("rewrite raft state under the new data key: %w", err)
		}
		keys.Previous = nil
		if err := n.writeDataKeys(keys); err != nil {
			return err
		}
	}
	n.keysSettled.Store(true)
	if !sameKey(want, have) {
		n.log.Info("autolock: this manager's keys are in line with the cluster", "autolock", want != nil)
	}
	return nil
}

func sameKey(a, b *encryption.Key) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a[:], b[:])
}
