package keyring

import (
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/encryption"
)

// Wrong unlock keys slow down further attempts (docs/adr/0023). The
// unlock key is 256 random bits and Unlock is served on the local socket
// only, so the limit is defence in depth: whoever (or whatever script)
// reaches the socket cannot try keys at the speed of the socket, and a
// loop feeding a wrong key stands out in the log instead of hammering
// the key file.
const (
	// FreeUnlockAttempts wrong keys are refused at once, for an operator
	// pasting the wrong line or a key from before a rotation.
	FreeUnlockAttempts = 5
	// FirstUnlockDelay is how long the attempt after the last free one
	// waits; each further wrong key doubles it, up to MaxUnlockDelay.
	FirstUnlockDelay = time.Second
	MaxUnlockDelay   = 5 * time.Minute
)

// Unlock opens this node's data keys with the unlock key text, for a
// manager restarted locked, and holds the key: the daemon starts the
// manager next, and calls ForgetUnlockKey if it could not. A wrong key
// changes nothing and is counted, and after FreeUnlockAttempts of them
// further attempts wait. The errors are the operator's answer, with
// their reason words and codes.
func (k *Keyring) Unlock(text string) error {
	k.unlockMu.Lock()
	defer k.unlockMu.Unlock()
	if err := k.unlockRateLimited(); err != nil {
		return err
	}
	kek, err := encryption.ParseUnlockKey(text)
	if err != nil {
		failed := k.unlockFailed()
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "%v (failed unlock attempts: %d)", err, failed)
	}
	if _, err := encryption.ReadKeyFile(k.dir.DataKeys(), &kek); err != nil {
		if !errors.Is(err, encryption.ErrLocked) {
			return grpcstatus.Error(codes.Internal, err.Error())
		}
		failed := k.unlockFailed()
		k.log.Warn("wrong unlock key refused", "failed_attempts", failed)
		return reason.Error(codes.PermissionDenied, reason.PermissionDenied,
			"this unlock key does not open this manager's data key (failed unlock attempts: %d); "+
				"a manager that was down when the key was rotated opens with the previous key", failed)
	}
	k.kek.Store(&kek)
	return nil
}

// FailedUnlocks is how many wrong unlock keys were given since the daemon
// started (`jaco cluster status` shows it).
func (k *Keyring) FailedUnlocks() uint32 { return k.failedUnlocks.Load() }

// unlockDelay is how long after the failed-th wrong key the next attempt
// is refused.
func unlockDelay(failed uint32) time.Duration {
	if failed < FreeUnlockAttempts {
		return 0
	}
	// Past 2^9 s the cap holds; stop shifting before it overflows.
	d := FirstUnlockDelay << min(failed-FreeUnlockAttempts, 16)
	return min(d, MaxUnlockDelay)
}

// unlockRateLimited refuses an attempt made before the delay set by the
// last wrong key has passed, without looking at the key: checking it
// would let wrong keys be tried at full speed. Called with unlockMu held.
func (k *Keyring) unlockRateLimited() error {
	wait := time.Until(k.unlockNotBefore)
	if wait <= 0 {
		return nil
	}
	return reason.Error(codes.ResourceExhausted, reason.RateLimited,
		"%d wrong unlock keys were given: the next attempt is accepted in %s",
		k.failedUnlocks.Load(), wait.Round(100*time.Millisecond))
}

// unlockFailed counts a wrong key and sets when the next attempt is
// accepted. Called with unlockMu held.
func (k *Keyring) unlockFailed() uint32 {
	failed := k.failedUnlocks.Add(1)
	k.unlockNotBefore = time.Now().Add(unlockDelay(failed))
	return failed
}
