package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// formManagers starts n managers, initializes the first and joins the
// rest through it, and waits until every one sees the voter set the
// policy asks for.
func formManagers(t testing.TB, n int) []*daemon {
	t.Helper()
	var ds []*daemon
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("m%d", i)
		ds = append(ds, startDaemon(t, name, "--node-name", name))
	}
	ds[0].initQuiet()
	for _, d := range ds[1:] {
		wantOK(t, d.jaco("node", "join", "--peer", ds[0].addr, "--token", ds[0].joinToken("manager")))
	}
	wantVoters := voterTarget(n)
	for _, d := range ds {
		waitVoters(t, d, n, wantVoters)
	}
	return ds
}

// waitVoters waits until d sees members managers of which voters vote,
// and a leader.
func waitVoters(t testing.TB, d *daemon, members, voters int) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		s, err := d.tryStatus()
		if err != nil {
			return err
		}
		var v int
		for _, m := range s.Members {
			if m.Suffrage == "VOTER" {
				v++
			}
		}
		if len(s.Members) != members || v != voters || s.Leader == "" {
			return fmt.Errorf("%s sees %d members, %d voters, leader %q; want %d, %d and a leader",
				d.name, len(s.Members), v, s.Leader, members, voters)
		}
		return nil
	})
}

// TestRemoveManagers removes a follower through another follower, then
// the leader itself, checking the voter set the policy allows after each
// step and that the removed daemons stop, saying why.
func TestRemoveManagers(t *testing.T) {
	t.Parallel()
	ds := formManagers(t, 3)
	leader, followers := splitLeader(t, ds)
	gone, stays := followers[0], followers[1]

	// A follower removed through the other follower (forwarded to the
	// leader). Two managers remain: one voter.
	wantOK(t, stays.jaco("node", "remove", gone.name))
	for _, d := range []*daemon{leader, stays} {
		waitVoters(t, d, 2, 1)
		nodes, err := d.tryNodes()
		if err != nil || slices.ContainsFunc(nodes, func(n nodeEntry) bool { return n.Hostname == gone.name }) {
			t.Fatalf("%s still lists %s after its removal (%v)", d.name, gone.name, err)
		}
	}
	waitExit(t, gone, "node_removed")

	// The leader removed through itself: it hands leadership to the other
	// manager first, and the removal completes there.
	wantOK(t, leader.jaco("node", "remove", leader.name))
	waitVoters(t, stays, 1, 1)
	waitExit(t, leader, "node_removed")
	wantOK(t, stays.jaco("node", "issue-join-token"))

	// The last manager stays.
	wantError(t, stays.jaco("node", "remove", stays.name), 1, "invalid_spec")
}

// waitExit waits until d's process has exited, its log naming why.
func waitExit(t testing.TB, d *daemon, why string) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		if d.running() {
			return fmt.Errorf("%s still running", d.name)
		}
		if !strings.Contains(d.log(), why) {
			return fmt.Errorf("%s exited without saying %q", d.name, why)
		}
		return nil
	})
}
