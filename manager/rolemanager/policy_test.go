package rolemanager

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jaco-project/jaco/manager/voterset"
)

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{NoAction: "none", Promote: "promote", Demote: "demote", Action(9): "Action(9)"} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

// TestDecideConverges starts from random configurations of eligible
// members and applies decisions until none is left: it must end at the
// target, never demote the leader, and take no more steps than there are
// members.
func TestDecideConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	now := epoch.Add(time.Hour)
	for iter := range 500 {
		n := 1 + rng.IntN(10)
		members := make([]Member, n)
		for i := range members {
			members[i] = Member{
				RaftID:        rng.Uint64N(1<<20) + 1 + uint64(i)<<32, // unique, unordered
				NodeID:        fmt.Sprintf("node-%02d", rng.IntN(100)) + fmt.Sprint(i),
				Voter:         rng.IntN(2) == 0,
				CaughtUp:      true,
				InConfigSince: epoch,
			}
		}
		leaderIdx := rng.IntN(n)
		members[leaderIdx].Voter = true
		leader := members[leaderIdx].RaftID

		steps := 0
		for {
			d := Decide(members, leader, now, DefaultPromoteAfter)
			if d.Action == NoAction {
				break
			}
			if d.Action == Demote && d.RaftID == leader {
				t.Fatalf("iteration %d: demoted the leader: %+v", iter, d)
			}
			steps++
			if steps > n {
				t.Fatalf("iteration %d: no convergence after %d steps: %+v", iter, steps, members)
			}
			for i := range members {
				if members[i].RaftID == d.RaftID {
					if members[i].Voter == (d.Action == Promote) {
						t.Fatalf("iteration %d: %v of a member that already has that role", iter, d.Action)
					}
					members[i].Voter = d.Action == Promote
				}
			}
		}
		voters := 0
		for _, m := range members {
			if m.Voter {
				voters++
			}
		}
		if want := voterset.TargetVoters(n); voters != want {
			t.Fatalf("iteration %d: settled at %d voters of %d managers, want %d", iter, voters, n, want)
		}
	}
}

func TestDecideNoMembers(t *testing.T) {
	if d := Decide(nil, 1, epoch, DefaultPromoteAfter); d.Action != NoAction {
		t.Fatalf("Decide(nil) = %+v, want no action", d)
	}
}
