package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/jaco-project/jaco/internal/waitfor"
)

// remove takes member i out of the cluster through member via (`jaco node
// remove --force`), waits for its daemon to leave (a removed manager
// exits by itself), and wipes its data dir.
func (c *cluster) remove(ctx context.Context, i, via int) error {
	m, peer := c.members[i], c.members[via]
	m.allowExit()
	if _, err := c.cli(ctx, peer, "node", "remove", "--force", m.name); err != nil {
		return err
	}
	if err := waitfor.Until(ctx, stopTimeout, waitPoll, func(context.Context) error {
		if m.running() {
			return fmt.Errorf("%s still runs after its removal", m.name)
		}
		return nil
	}); err != nil {
		// Not a finding in itself (the daemon may learn of its
		// removal only later); it is stopped.
		if err := m.stop(); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(m.dir); err != nil {
		return fmt.Errorf("wipe %s: %w", m.dir, err)
	}
	return nil
}

// join starts member i on an empty data dir and joins it as a manager
// through member via.
func (c *cluster) join(ctx context.Context, i, via int) error {
	m, peer := c.members[i], c.members[via]
	if err := m.start(ctx); err != nil {
		return err
	}
	tok, err := c.cli(ctx, peer, "node", "issue-join-token", "--role", "manager")
	if err != nil {
		return err
	}
	_, err = c.cli(ctx, m, "node", "join", "--peer", peer.addr(), "--token", strings.TrimSpace(tok))
	return err
}

// rejoin is the runbook for a member that must not come back with its
// log: remove it through member via, wipe its data dir, join it again.
func (c *cluster) rejoin(ctx context.Context, i, via int) error {
	if err := c.remove(ctx, i, via); err != nil {
		return err
	}
	return c.join(ctx, i, via)
}

// churn removes member i under load and, as the heal, joins it again on
// a wiped data dir. Three managers become two (one voter, so a voter is
// demoted) and then three again (a nonvoter promoted): every membership
// change the voter-set policy makes (docs/design.md §4).
func churn(ctx context.Context, c *cluster, i, via int) (fault, error) {
	if err := c.remove(ctx, i, via); err != nil {
		return fault{}, fmt.Errorf("remove %s: %w", c.members[i].name, err)
	}
	m := c.members[i]
	return fault{
		what:  "remove " + m.name,
		heal:  func(ctx context.Context) error { return c.join(ctx, i, via) },
		after: func() string { return ", joined afresh" },
	}, nil
}

// membershipChurn removes a follower and joins it again.
func membershipChurn(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return churn(ctx, c, followers(c, l, rng)[0], l)
}

// leaderTransfer removes the leader through a follower: the leader hands
// leadership over (raft's leadership transfer) while the clients write,
// and the new leader removes it. Healing joins it again.
func leaderTransfer(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	f, err := churn(ctx, c, l, followers(c, l, rng)[0])
	if err != nil {
		return f, err
	}
	// The removed leader's log, before it is started again.
	m := c.members[l]
	handed := strings.Contains(m.logSince(), "leadership handed over")
	f.check = func() error {
		if !handed {
			return fmt.Errorf("%s was removed without handing leadership over (no %q in its log)", m.name, "leadership handed over")
		}
		return nil
	}
	return f, nil
}

// partitionJoining removes a follower, joins it again on a wiped data dir
// and cuts it off from the others as soon as the join was accepted: a
// member added to raft that has not caught up yet, nor been promoted.
// Healing the cut, it must catch up and become a voter.
func partitionJoining(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	i := followers(c, l, rng)[0]
	if err := c.rejoin(ctx, i, l); err != nil {
		return fault{}, err
	}
	f, err := isolate(ctx, c, i)
	f.what = "remove " + c.members[i].name + ", join it afresh and " + f.what + " at once"
	return f, err
}
