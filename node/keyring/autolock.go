package keyring

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/node/internal/reconcile"
)

// Autolock on a manager (docs/adr/0012). The cluster object says whether
// autolock is on and holds the unlock key; each manager brings its own
// files in line with it (reconcile), and a manager restarted with sealed
// data keys waits in the locked state for Unlock.

// Run is the autolock loop: it brings the files of the daemon's manager of
// now in line with the cluster's autolock setting, at once when a manager
// starts (ManagerStarted), whenever the cluster object changes, and every
// CheckInterval (which retries a failed pass). It waits while the daemon
// runs no manager, and returns when ctx ends. The daemon runs it in a
// goroutine of its own and waits for it to return before it stops.
func (k *Keyring) Run(ctx context.Context) {
	for ctx.Err() == nil {
		m := k.daemon.Manager()
		if m == nil {
			select {
			case <-ctx.Done():
			case <-k.kick:
			}
			continue
		}
		k.kickLoop() // a manager new to this loop: reconcile now
		k.follow(ctx, m)
	}
}

// ManagerStarted tells the autolock loop that the daemon runs a new
// manager: its files are brought in line afresh, at once. Call it once
// Daemon.Manager returns that manager: a loop waiting for one looks when
// told, and waits again if it finds none.
func (k *Keyring) ManagerStarted() {
	k.settled.Store(false)
	k.kickLoop()
}

// Settled reports whether the files were brought in line with the
// cluster's autolock setting since the manager started. Read after
// UnlockKey, it says whether the files are in line with that key: a pass
// clears it before it changes the key.
func (k *Keyring) Settled() bool { return k.settled.Load() }

// kickLoop asks the autolock loop for a pass now; one already asked for
// is enough.
func (k *Keyring) kickLoop() { reconcile.Kick(k.kick) }

// follow reconciles m's files when kicked, when the cluster object
// changes and every interval, until ctx ends or m stops (its
// ClusterChanged closes).
func (k *Keyring) follow(ctx context.Context, m Manager) {
	reconcile.Loop{
		Interval: k.interval,
		Kick:     k.kick,
		Wake:     m.ClusterChanged(ctx),
		FailMsg:  "autolock: bringing this manager's keys in line failed; retrying",
		Step:     func(ctx context.Context) error { return k.reconcile(ctx, m) },
		Logger:   k.log,
	}.Run(ctx)
}

// reconcile seals this manager's data keys with the cluster's unlock key
// (or writes them in clear when autolock is off). When the keys were in
// clear before, the data key is rotated first: the raft log and
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
func (k *Keyring) reconcile(ctx context.Context, m Manager) error {
	unlock, err := k.daemon.LockChanges()
	if err != nil {
		return err
	}
	defer unlock()
	if k.daemon.Manager() != m {
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
	have := k.UnlockKey()
	if sameKey(want, have) && k.settled.Load() {
		return nil
	}
	keys, err := k.dataKeys()
	if err != nil {
		return err
	}
	if want == nil && have == nil && len(keys.Previous) == 0 && !k.nodeKeySealed() {
		k.settled.Store(true) // autolock off, files in clear: nothing to do
		return nil
	}
	if want != nil && have == nil {
		old := keys.Current
		if keys.Current, err = encryption.NewKey(); err != nil {
			return fmt.Errorf("new data key: %w", err)
		}
		keys.Previous = append([]encryption.Key{old}, keys.Previous...)
	}
	// Not settled from before the key changes: whoever sees the new key
	// (UnlockKey) and then Settled must not be told the last pass's
	// settled while the files are still being rewritten.
	k.settled.Store(false)
	k.kek.Store(want)
	if err := k.writeDataKeys(keys); err != nil {
		k.kek.Store(have)
		return err
	}
	// From here the files are under want: a failure below is retried by
	// the next pass, which finds the rotation still pending.
	caPEM, certPEM, keyPEM, err := k.LoadNodeFiles()
	if err != nil {
		return err
	}
	if err := k.SaveNodeFiles(caPEM, certPEM, keyPEM); err != nil {
		return err
	}
	if err := k.resealOverlayKey(); err != nil {
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
		if err := k.writeDataKeys(keys); err != nil {
			return err
		}
	}
	k.settled.Store(true)
	if !sameKey(want, have) {
		k.log.Info("autolock: this manager's keys are in line with the cluster", "autolock", want != nil)
	}
	return nil
}

func sameKey(a, b *encryption.Key) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a[:], b[:])
}
