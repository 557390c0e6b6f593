package chaos

// Faults on the network: nftables drop rules inside a host's namespace.

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// isolate cuts member i off from every other member. Dropping on one side
// cuts both directions; its clients, on the socket, still reach it.
func isolate(ctx context.Context, c *cluster, i int) (fault, error) {
	m := c.members[i]
	var others []*host
	for j, o := range c.members {
		if j != i {
			others = append(others, o.host)
		}
	}
	if err := m.host.cut(ctx, others); err != nil {
		return fault{}, err
	}
	return fault{what: "isolate " + m.name, heal: m.host.heal}, nil
}

// partitionMinority cuts a follower off: the majority keeps its leader.
func partitionMinority(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return isolate(ctx, c, followers(c, l, rng)[0])
}

// partitionLeaderAlone cuts the leader off: the majority elects another
// while the old one may still believe it leads.
func partitionLeaderAlone(ctx context.Context, c *cluster, _ *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	return isolate(ctx, c, l)
}

// partitionBridge cuts two members from each other and leaves the third,
// the bridge, seeing both. Which member bridges is picked at random: a
// leader on one side of the cut loses the other side's votes to the
// bridge or keeps them, and both must be safe.
func partitionBridge(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	order := rng.Perm(len(c.members))
	bridge, a, b := c.members[order[0]], c.members[order[1]], c.members[order[2]]
	if err := a.host.cut(ctx, []*host{b.host}); err != nil {
		return fault{}, err
	}
	return fault{what: fmt.Sprintf("cut %s|%s, bridge %s", a.name, b.name, bridge.name), heal: a.host.heal}, nil
}
