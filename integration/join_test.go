package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// joinToken mints a join token for role through d.
func (d *daemon) joinToken(role string, extra ...string) string {
	d.t.Helper()
	r := wantOK(d.t, d.jaco(append([]string{"node", "issue-join-token", "--role", role}, extra...)...))
	return strings.TrimSpace(r.stdout)
}

// splitLeader returns the daemon that leads, as the first of ds sees it,
// and the others.
func splitLeader(t testing.TB, ds []*daemon) (leader *daemon, rest []*daemon) {
	t.Helper()
	leaderID := ds[0].status().Leader
	for _, d := range ds {
		if d.status().NodeID == leaderID {
			leader = d
		} else {
			rest = append(rest, d)
		}
	}
	if leader == nil {
		t.Fatalf("no daemon has the leader's node id %q", leaderID)
	}
	return leader, rest
}

// voters returns the members d reports as voters and the leader's node id.
func (d *daemon) voters() (voters []string, leader string, err error) {
	s, err := d.tryStatus()
	if err != nil {
		return nil, "", err
	}
	for _, m := range s.Members {
		if m.Suffrage == "VOTER" {
			voters = append(voters, m.Hostname)
		}
	}
	slices.Sort(voters)
	return voters, s.Leader, nil
}

// TestManagersJoinAndSurviveLeaderLoss forms three managers from tokens,
// checks that they become voters and agree on the cluster, then kills the
// leader and writes again through the survivors.
func TestManagersJoinAndSurviveLeaderLoss(t *testing.T) {
	t.Parallel()
	m1 := startDaemon(t, "m1", "--node-name", "m1")
	m2 := startDaemon(t, "m2", "--node-name", "m2")
	m3 := startDaemon(t, "m3", "--node-name", "m3")
	m1.initQuiet()

	wantOK(t, m2.jaco("node", "join", "--peer", m1.addr, "--token", m1.joinToken("manager")))
	// m3 joins through m2, a follower: the admission is forwarded to m1,
	// and so is the token's issuance.
	eventually(t, 20*time.Second, func() error {
		_, err := m2.tryNodes()
		return err
	})
	tok3 := m2.joinToken("manager")
	wantOK(t, m3.jaco("node", "join", "--peer", m2.addr, "--token", tok3))

	all := []*daemon{m1, m2, m3}
	want := []string{"m1", "m2", "m3"}
	for _, d := range all {
		eventually(t, 30*time.Second, func() error {
			voters, leader, err := d.voters()
			if err != nil {
				return err
			}
			if !slices.Equal(voters, want) || leader == "" {
				return fmt.Errorf("%s sees voters %v, leader %q; want %v and a leader", d.name, voters, leader, want)
			}
			nodes, err := d.tryNodes()
			if err != nil {
				return err
			}
			if len(nodes) != 3 {
				return fmt.Errorf("%s lists %d nodes, want 3", d.name, len(nodes))
			}
			return nil
		})
	}

	// A used token stays used, whichever manager is asked.
	m4 := startDaemon(t, "m4", "--node-name", "m4")
	wantError(t, m4.jaco("node", "join", "--peer", m3.addr, "--token", tok3), 1, "token_consumed")
	wantError(t, m4.jaco("node", "join", "--peer", m1.addr, "--token", "JACO1-nonsense"), 1, "token_invalid")
	expiring := m1.joinToken("worker", "--ttl", "1ms")
	time.Sleep(5 * time.Millisecond) // the token's own lifetime, not a wait for a condition
	wantError(t, m4.jaco("node", "join", "--peer", m1.addr, "--token", expiring), 1, "token_expired")

	// Kill the leader; the other two elect a new one and take writes again,
	// through either of them.
	leader, rest := splitLeader(t, all)
	leaderID := leader.status().NodeID
	leader.kill()
	for _, d := range rest {
		eventually(t, 20*time.Second, func() error {
			s, err := d.tryStatus()
			if err != nil {
				return err
			}
			if s.Leader == "" || s.Leader == leaderID {
				return fmt.Errorf("%s: leader %q, want a new one", d.name, s.Leader)
			}
			return d.jaco("node", "issue-join-token").err()
		})
	}

	// The old leader comes back as a follower and catches up.
	leader.start()
	eventually(t, 30*time.Second, func() error {
		s, err := leader.tryStatus()
		if err != nil {
			return err
		}
		if s.Leader == "" {
			return fmt.Errorf("%s sees no leader", leader.name)
		}
		nodes, err := leader.tryNodes()
		if err != nil {
			return err
		}
		if len(nodes) != 3 {
			return fmt.Errorf("%s lists %d nodes after restart, want 3", leader.name, len(nodes))
		}
		return nil
	})
}

// TestWorkerJoin: a worker token makes a node with a worker certificate
// that stays out of raft, and keeps being one across a restart.
func TestWorkerJoin(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m", "--node-name", "m")
	w := startDaemon(t, "w", "--node-name", "w")
	m.initQuiet()
	wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	for range 2 {
		s := w.status()
		if s.State != "ready" || s.ClusterID != m.status().ClusterID {
			t.Fatalf("worker status %+v, want ready in cluster %s", s, m.status().ClusterID)
		}
		wantError(t, w.jaco("node", "ls"), 1, "not_a_manager")
		w.restart()
	}
	nodes, err := m.tryNodes()
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, n := range nodes {
		roles = append(roles, n.Hostname+"="+n.Role)
	}
	if !slices.Equal(roles, []string{"m=manager", "w=worker"}) {
		t.Fatalf("nodes %v, want m=manager w=worker", roles)
	}
	if s := m.status(); len(s.Members) != 1 {
		t.Fatalf("raft members %+v, want just the manager", s.Members)
	}
}
