package chaos

// Faults on the network: nftables drop rules inside a host's namespace
// (internal/testcluster writes them).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/jaco-project/jaco/internal/testcluster"
)

// split cuts every member in a off from every member in b. Dropping on
// one side cuts both directions, so only a's hosts get rules; clients,
// on the sockets, still reach every member.
func split(ctx context.Context, c *cluster, a, b []int) (fault, error) {
	var bHosts []*testcluster.Host
	for _, j := range b {
		bHosts = append(bHosts, c.members[j].host)
	}
	for _, i := range a {
		if err := c.members[i].host.Partition(ctx, bHosts...); err != nil {
			return fault{}, err
		}
	}
	return fault{
		what: fmt.Sprintf("cut %s | %s", names(c, a), names(c, b)),
		heal: func(ctx context.Context) error {
			var errs []error
			for _, i := range a {
				errs = append(errs, c.members[i].host.Heal(ctx))
			}
			return errors.Join(errs...)
		},
	}, nil
}

// names joins the names of the members at idx.
func names(c *cluster, idx []int) string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = c.members[i].name
	}
	return strings.Join(out, ",")
}

// isolate cuts member i off from every other member.
func isolate(ctx context.Context, c *cluster, i int) (fault, error) {
	var others []int
	for j := range c.members {
		if j != i {
			others = append(others, j)
		}
	}
	f, err := split(ctx, c, []int{i}, others)
	f.what = "isolate " + c.members[i].name
	return f, err
}

// partitionMinority cuts the largest minority of followers (one of
// three, two of five) off from the rest: the majority keeps its leader.
func partitionMinority(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	fs := followers(c, l, rng)
	k := (len(c.members) - 1) / 2
	return split(ctx, c, fs[:k], append([]int{l}, fs[k:]...))
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

// partitionBridge splits the members but one into two halves that cannot
// reach each other, and leaves that one, the bridge, seeing both: neither
// half is a majority without it. Which member bridges is picked at
// random: a leader in one half loses the other half's votes to the bridge
// or keeps them, and both must be safe.
func partitionBridge(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	order := rng.Perm(len(c.members))
	bridge, rest := order[0], order[1:]
	half := len(rest) / 2
	f, err := split(ctx, c, rest[:half], rest[half:])
	f.what += ", bridge " + c.members[bridge].name
	return f, err
}
