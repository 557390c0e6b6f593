package jointoken

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jaco-project/jaco/manager/state/store"
)

// SweepGrace is how long a used or expired token is kept before the sweep
// deletes it: long enough for an operator to see why a join was refused.
const SweepGrace = time.Hour

// maxSweep bounds one sweep's write, so a backlog becomes several modest
// raft entries rather than one huge one.
const maxSweep = 1000

// Sweep deletes tokens consumed or expired more than grace before now, up
// to maxSweep of them in one write. Without it every token ever issued
// would stay in the store.
//
// It reads the spent tokens only, in the order they were spent, through
// the store's index of that: a copy of every token, once a minute, took
// the leader 1.4 s of CPU and 100 MB with 400 000 tokens stored, and
// writes stalled behind it for up to a second; and the store
// keeps tokens encoded, so reading one decodes it (docs/adr/0055).
func Sweep(ctx context.Context, st *store.Store, now time.Time, grace time.Duration) (int, error) {
	var n int
	err := st.Update(ctx, func(tx *store.Tx) error {
		// Collected first: the Tx is not written while it is read.
		doomed := tx.JoinTokensSpentBefore(now.Add(-grace), maxSweep)
		for _, jt := range doomed {
			if err := tx.Delete(jt); err != nil { // Delete takes its own copy
				return err
			}
		}
		n = len(doomed)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep join tokens: %w", err)
	}
	return n, nil
}

// RunSweeper sweeps every interval until ctx ends; the manager runs it as
// a leader subsystem.
func RunSweeper(ctx context.Context, st *store.Store, interval time.Duration, log *slog.Logger) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		n, err := Sweep(ctx, st, time.Now(), SweepGrace)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("sweep join tokens", "err", err)
		case n > 0:
			log.Info("swept spent join tokens", "count", n)
		}
	}
}
