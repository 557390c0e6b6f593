package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// pauseHold is how long a pause nemesis keeps its manager stopped: five
// election timeouts, long enough for the others to elect and take writes.
const pauseHold = 5 * time.Second

// fault is one injected fault: what was done, and how to undo it.
type fault struct {
	// what names the managers hit, for the schedule.
	what string
	// hold, when set, is how long the fault must last whatever the
	// schedule says (a pause is 5 s).
	hold time.Duration
	// wait, when set, holds the fault instead of a time: until the
	// cluster has done what the nemesis needs.
	wait func(ctx context.Context) error
	heal func(ctx context.Context) error
	// after, when set, runs after heal and adds to what: what the fault
	// turned out to do.
	after func() string
	// check, when set, runs once the cluster recovered and says whether
	// the fault did what the nemesis is named for.
	check func() error
}

// Nemesis is a named fault: inject does it to the cluster and returns how
// to heal it. rng picks the targets, so a seed replays them.
type Nemesis struct {
	Name   string
	setup  setup
	inject func(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error)
}

// Nemeses are the faults the runner knows, by name.
var Nemeses = []Nemesis{
	{Name: "kill-leader", inject: killLeader},
	{Name: "kill-follower", inject: killFollower},
	{Name: "kill-majority", inject: killMajority},
	{Name: "pause-leader", inject: pauseLeader},
	{Name: "pause-follower", inject: pauseFollower},
	{Name: "partition-minority", inject: partitionMinority},
	{Name: "partition-leader-alone", inject: partitionLeaderAlone},
	{Name: "partition-bridge", inject: partitionBridge},
	{Name: "snapshot-follower", setup: setup{flags: snapshotFlags}, inject: snapshotFollower},
	{Name: "full-disk-follower", setup: setup{flags: fullDiskFlags, smallDisks: true}, inject: fullDiskFollower},
	{Name: "torn-wal-follower", inject: tornWALFollower},
	{Name: "membership-churn", inject: membershipChurn},
	{Name: "leader-transfer", inject: leaderTransfer},
	{Name: "partition-joining", inject: partitionJoining},
	{Name: "restart-all", inject: restartAll},
}

// NemesisNames lists Nemeses' names in order.
func NemesisNames() []string {
	names := make([]string, len(Nemeses))
	for i, n := range Nemeses {
		names[i] = n.Name
	}
	return names
}

// setup is what a nemesis needs of the cluster it runs against.
type setup struct {
	// flags are every daemon's extra flags.
	flags []string
	// smallDisks puts every member's data dir on a small filesystem of
	// its own, which a nemesis can fill.
	smallDisks bool
}

// nemesisSetup is the setup a run of name needs: for Random, that of
// every nemesis.
func nemesisSetup(name string) setup {
	var s setup
	for _, n := range Nemeses {
		if n.Name != name && name != Random {
			continue
		}
		for _, f := range n.setup.flags {
			if !slices.Contains(s.flags, f) {
				s.flags = append(s.flags, f)
			}
		}
		s.smallDisks = s.smallDisks || n.setup.smallDisks
	}
	return s
}

// nemesisByName returns the nemesis called name.
func nemesisByName(name string) (Nemesis, error) {
	i := slices.IndexFunc(Nemeses, func(n Nemesis) bool { return n.Name == name })
	if i < 0 {
		return Nemesis{}, fmt.Errorf("no nemesis %q; known: %s", name, strings.Join(NemesisNames(), ", "))
	}
	return Nemeses[i], nil
}

// followers returns the indexes of every member but leader, shuffled.
func followers(c *cluster, leader int, rng *rand.Rand) []int {
	var out []int
	for i := range c.members {
		if i != leader {
			out = append(out, i)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
