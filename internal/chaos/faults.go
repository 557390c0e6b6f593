package chaos

// Faults on processes: SIGKILL and restart, SIGSTOP and SIGCONT.

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"
)

// kill SIGKILLs the members at idx; healing starts them again on the same
// data dirs, all at once.
func kill(c *cluster, idx ...int) (fault, error) {
	var names []string
	for _, i := range idx {
		if err := c.members[i].kill(); err != nil {
			return fault{}, err
		}
		names = append(names, c.members[i].name)
	}
	return fault{what: "SIGKILL " + strings.Join(names, ","), heal: func(ctx context.Context) error {
		errs := make(chan error, len(idx))
		for _, i := range idx {
			go func() { errs <- c.members[i].start(ctx) }()
		}
		var all []error
		for range idx {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	}}, nil
}

func killLeader(ctx context.Context, c *cluster, _ *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return kill(c, l)
}

func killFollower(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return kill(c, followers(c, l, rng)[0])
}

// killMajority kills the leader and as many followers as make a majority
// (one of three, two of five): the survivors cannot elect, and the
// restarted members must come back with everything the cluster
// acknowledged.
func killMajority(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return kill(c, append([]int{l}, followers(c, l, rng)[:len(c.members)/2]...)...)
}

func restartAll(_ context.Context, c *cluster, _ *rand.Rand) (fault, error) {
	idx := make([]int, len(c.members))
	for i := range idx {
		idx[i] = i
	}
	f, err := kill(c, idx...)
	// Every manager restarted at once: the fault is the restart, not a
	// long outage.
	f.hold = time.Second
	return f, err
}

// pause SIGSTOPs member i for pauseHold.
func pause(ctx context.Context, c *cluster, i int) (fault, error) {
	m := c.members[i]
	if err := m.pause(ctx); err != nil {
		return fault{}, err
	}
	return fault{what: "SIGSTOP " + m.name, hold: pauseHold, heal: m.resume}, nil
}

func pauseLeader(ctx context.Context, c *cluster, _ *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return pause(ctx, c, l)
}

func pauseFollower(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return pause(ctx, c, followers(c, l, rng)[0])
}
