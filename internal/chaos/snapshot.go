package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/jaco-project/jaco/internal/waitfor"
)

// snapshotFlags make the leader snapshot often and log at debug level,
// where go.etcd.io/raft says when a follower installs a snapshot. The
// leader keeps 500 entries behind its snapshot for slow followers
// (raft.DefaultLogEntriesForSlowFollowers; jacod has no flag for it).
var snapshotFlags = []string{"--snapshot-interval", "100", "--log-level", "debug"}

// snapshotLag is how many writes the cluster acknowledges while the
// follower is down: past the 500 kept entries and a snapshot interval, so
// the entries it needs are gone from the leader's log.
const snapshotLag = 900

// snapshotLagLimit bounds the wait for those writes.
const snapshotLagLimit = 60 * time.Second

// snapshotRestored is what go.etcd.io/raft logs (debug) when a follower
// installs a snapshot the leader sent; a member starting from its own
// snapshot does not log it.
var snapshotRestored = regexp.MustCompile(`restored snapshot \[index: \d+`)

// snapshotFollower kills a follower until the cluster has moved on further
// than the leader keeps log for, under the workloads' load, and restarts
// it: it must be brought back by a snapshot install, and then serve
// linearizable reads like the others.
func snapshotFollower(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	i := followers(c, l, rng)[0]
	f, err := kill(c, i)
	if err != nil {
		return fault{}, err
	}
	m := c.members[i]
	from := c.acked.Load()
	f.what += fmt.Sprintf(" for %d writes", snapshotLag)
	f.wait = func(ctx context.Context) error {
		return waitfor.Until(ctx, snapshotLagLimit, waitPoll, func(context.Context) error {
			if n := c.acked.Load() - from; n < snapshotLag {
				return fmt.Errorf("%d of %d writes acknowledged while %s is down", n, snapshotLag, m.name)
			}
			return nil
		})
	}
	f.check = func() error {
		if !snapshotRestored.MatchString(m.logSince()) {
			return fmt.Errorf("%s caught up without installing a snapshot from the leader (no %q in its log)", m.name, snapshotRestored)
		}
		return nil
	}
	return f, nil
}
