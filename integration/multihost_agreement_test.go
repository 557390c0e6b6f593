package integration

// What the managers of a multi-host cluster (multihost_cluster_test.go)
// must agree on, and the waits built on it: one view per manager, the
// agreement of all views with the voter policy, a side that has no leader
// refusing writes, a side that has one acknowledging them.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// view is what one manager says about the group: its members (sorted, in
// the fields every member must agree on), its leader and its node list.
type view struct {
	name    string
	status  clusterStatus
	members []string // "hostname raft_id address suffrage"
	voters  int
	nodes   []string // "id hostname role address"
}

func (d *nsDaemon) view() (view, error) {
	v := view{name: d.name}
	s, err := d.tryStatus()
	if err != nil {
		return v, err
	}
	v.status = s
	for _, m := range s.Members {
		v.members = append(v.members, fmt.Sprintf("%s %s %s %s", m.Hostname, m.RaftID, m.Address, m.Suffrage))
		if m.Suffrage == "VOTER" {
			v.voters++
		}
	}
	slices.Sort(v.members)
	nodes, err := d.tryNodes()
	if err != nil {
		return v, err
	}
	for _, n := range nodes {
		v.nodes = append(v.nodes, fmt.Sprintf("%s %s %s %s", n.ID, n.Hostname, n.Role, n.Address))
	}
	slices.Sort(v.nodes)
	return v, nil
}

// agreement checks that every manager in ask sees the same group of
// exactly members (names and addresses), with a leader among them, the
// policy's number of voters, and the same node list; it returns the first
// view when they agree.
func agreement(members, ask []*nsDaemon) (view, error) {
	var ref view
	for i, d := range ask {
		v, err := d.view()
		if err != nil {
			return ref, err
		}
		s := v.status
		if s.State != "ready" || s.Leader == "" {
			return ref, fmt.Errorf("%s: state %s, leader %q; want ready with a leader", d.name, s.State, s.Leader)
		}
		if i == 0 {
			ref = v
			if err := wantMembers(v, members); err != nil {
				return ref, err
			}
			continue
		}
		if s.Leader != ref.status.Leader || !slices.Equal(v.members, ref.members) {
			return ref, fmt.Errorf("%s sees leader %s, members %q; %s sees leader %s, members %q",
				d.name, s.Leader, v.members, ref.name, ref.status.Leader, ref.members)
		}
		if !slices.Equal(v.nodes, ref.nodes) {
			return ref, fmt.Errorf("%s lists nodes %q; %s lists %q", d.name, v.nodes, ref.name, ref.nodes)
		}
	}
	return ref, nil
}

// wantMembers checks one view against the managers that should be members.
func wantMembers(v view, members []*nsDaemon) error {
	s := v.status
	var got, want []string
	for _, m := range s.Members {
		got = append(got, m.Hostname+"@"+m.Address)
	}
	for _, d := range members {
		want = append(want, d.name+"@"+d.addr())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: members %q, want %q", v.name, got, want)
	}
	if target := voterTarget(len(members)); v.voters != target {
		return fmt.Errorf("%s: %d voters among %d managers, want %d: %q", v.name, v.voters, len(members), target, v.members)
	}
	if len(v.nodes) != len(members) {
		return fmt.Errorf("%s: node ls lists %d nodes, want %d: %q", v.name, len(v.nodes), len(members), v.nodes)
	}
	return nil
}

// waitConverged waits until all of c's managers agree (see agreement),
// asking the given ones (the others may be down or cut off).
func (c *mcluster) waitConverged(t testing.TB, ask []*nsDaemon) view {
	t.Helper()
	var v view
	eventually(t, convergeTimeout, func() (err error) {
		v, err = agreement(c.managers, ask)
		return err
	})
	return v
}

// firstWrite writes through the given managers in turn until one write is
// acknowledged and returns how long that took from start.
func firstWrite(t testing.TB, start time.Time, through []*nsDaemon) time.Duration {
	t.Helper()
	var took time.Duration
	eventually(t, electionTimeout, func() error {
		var errs []string
		for _, d := range through {
			err := d.write(time.Second)
			if err == nil {
				took = time.Since(start)
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("no write acknowledged: %s", strings.Join(errs, "; "))
	})
	return took
}

// wantLeaderless waits until each of ds (what: how the test calls them)
// names no leader, and requires a write through it to fail with no_leader
// or quorum_lost rather than be acknowledged by a group that cannot commit
// it.
func wantLeaderless(t testing.TB, ds []*nsDaemon, what string) {
	t.Helper()
	for _, d := range ds {
		eventually(t, electionTimeout, func() error {
			s, err := d.tryStatus()
			if err != nil {
				return err
			}
			if s.Leader != "" {
				return fmt.Errorf("%s %s still names leader %s", what, d.name, s.Leader)
			}
			return nil
		})
		r := d.jaco("--timeout", "2s", "node", "issue-join-token", "--role", "worker")
		if w := reasonOf(r); w != "no_leader" && w != "quorum_lost" {
			t.Errorf("write through %s %s: exit %d, stderr %q; want no_leader or quorum_lost", what, d.name, r.code, r.stderr)
		}
	}
}

// wantWritesThrough requires a write through each of ds to be acknowledged.
func wantWritesThrough(t testing.TB, ds []*nsDaemon) {
	t.Helper()
	for _, d := range ds {
		eventually(t, electionTimeout, func() error { return d.write(writeTimeout) })
	}
}

// reasonOf returns the reason word of a failed CLI call ("error: <word>:
// ..."), or "" when it succeeded or printed something else.
func reasonOf(r result) string {
	if r.code == 0 {
		return ""
	}
	rest, ok := strings.CutPrefix(r.stderr, "error: ")
	if !ok {
		return ""
	}
	word, _, _ := strings.Cut(rest, ":")
	return word
}
