package node

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api/reason"
)

// Wrong unlock keys slow down further attempts (docs/adr/0023). The
// unlock key is 256 random bits and Unlock is served on the local socket
// only, so the limit is defence in depth: whoever (or whatever script)
// reaches the socket cannot try keys at the speed of the socket, and a
// loop feeding a wrong key stands out in the log instead of hammering
// the key file.
const (
	// unlockFreeAttempts wrong keys are refused at once, for an operator
	// pasting the wrong line or a key from before a rotation.
	unlockFreeAttempts = 5
	// unlockFirstDelay is how long the attempt after the last free one
	// waits; each further wrong key doubles it, up to unlockMaxDelay.
	unlockFirstDelay = time.Second
	unlockMaxDelay   = 5 * time.Minute
)

// unlockDelay is how long after the failed-th wrong key the next attempt
// is refused.
func unlockDelay(failed uint32) time.Duration {
	if failed < unlockFreeAttempts {
		return 0
	}
	// Past 2^9 s the cap holds; stop shifting before it overflows.
	d := unlockFirstDelay << min(failed-unlockFreeAttempts, 16)
	return min(d, unlockMaxDelay)
}

// unlockRateLimited refuses an attempt made before the delay set by the
// last wrong key has passed, without looking at the key: checking it
// would let wrong keys be tried at full speed. Called with initMu held.
func (n *Node) unlockRateLimited() error {
	wait := time.Until(n.unlockNotBefore)
	if wait <= 0 {
		return nil
	}
	return reason.Error(codes.ResourceExhausted, reason.RateLimited,
		"%d wrong unlock keys were given: the next attempt is accepted in %s",
		n.failedUnlocks.Load(), wait.Round(100*time.Millisecond))
}

// unlockFailed counts a wrong key and sets when the next attempt is
// accepted. Called with initMu held.
func (n *Node) unlockFailed() uint32 {
	failed := n.failedUnlocks.Add(1)
	n.unlockNotBefore = time.Now().Add(unlockDelay(failed))
	return failed
}
