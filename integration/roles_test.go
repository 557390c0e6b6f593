package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/datadir"
)

// roleCluster starts a manager and n workers joined through it.
func roleCluster(t testing.TB, n int, flags ...string) (m *daemon, ws []*daemon) {
	t.Helper()
	m = startDaemon(t, "m1", flags...)
	for i := 1; i <= n; i++ {
		ws = append(ws, startDaemon(t, fmt.Sprintf("w%d", i), flags...))
	}
	m.initQuiet()
	for _, w := range ws {
		wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	}
	return m, ws
}

// roleOf is d's role in the cluster as the manager via sees it.
func roleOf(via, d *daemon) (string, error) {
	nodes, err := via.tryNodes()
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Hostname == d.name {
			return n.Role, nil
		}
	}
	return "", fmt.Errorf("%s does not list %s", via.name, d.name)
}

// waitWorker waits until d runs as a worker: still up, serving no
// manager's API, and listed as a worker by via.
func waitWorker(t testing.TB, via, d *daemon) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if !d.running() {
			return fmt.Errorf("%s exited", d.name)
		}
		if r := d.jaco("node", "ls"); r.code == 0 || !strings.Contains(r.stderr, "not_a_manager") {
			return fmt.Errorf("%s still serves node ls (code %d): %s", d.name, r.code, r.stderr)
		}
		if role, err := roleOf(via, d); err != nil || role != "worker" {
			return fmt.Errorf("%s role %q (%v), want worker", d.name, role, err)
		}
		if s, err := d.tryStatus(); err != nil || s.State != "ready" {
			return fmt.Errorf("%s status %+v (%v), want ready", d.name, s, err)
		}
		return nil
	})
}

// ackWrite makes a write through d and waits for it to be acknowledged.
func ackWrite(t testing.TB, d *daemon, step string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if r := d.jaco("node", "update", "--label-add", "step="+step, d.name); r.code != 0 {
			return fmt.Errorf("write after %s through %s: %s", step, d.name, r.stderr)
		}
		return nil
	})
}

// nodeCert reads d's node certificate files as they are now (callers
// keep the copy to compare or to dial with after a change).
func nodeCert(t testing.TB, d *daemon) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caPEM, certPEM, keyPEM, err := ca.LoadNodeFiles(datadir.Dir(d.dir).Node())
	if err != nil {
		t.Fatal(err)
	}
	return caPEM, certPEM, keyPEM
}

// dialCert dials addr presenting the node certificate certPEM.
func dialCert(caPEM, certPEM, keyPEM []byte, addr string) (*grpc.ClientConn, error) {
	cfg, err := ca.ClientTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
}

// raftCall speaks to addr's raft service with the given certificate.
func raftCall(caPEM, certPEM, keyPEM []byte, addr string) error {
	conn, err := dialCert(caPEM, certPEM, keyPEM, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = api.NewRaftServiceClient(conn).ResolveAddress(ctx, &api.ResolveAddressRequest{RaftId: 1})
	return err
}

// TestPromoteDemote: two workers promoted become managers and the voter
// set follows the policy (3 managers: 3 voters); the leader demoted hands
// leadership over, leaves raft and runs on as a worker whose old manager
// certificate the raft transport refuses; the last manager cannot be
// demoted; a demoted node can be promoted again.
func TestPromoteDemote(t *testing.T) {
	t.Parallel()
	m, ws := roleCluster(t, 2, "--heartbeat-period", "500ms")
	w1, w2 := ws[0], ws[1]

	wantOK(t, m.jaco("node", "promote", "w1"))
	waitVoters(t, m, 2, 1)
	waitVoters(t, w1, 2, 1)
	ackWrite(t, m, "promote-w1")
	wantOK(t, m.jaco("node", "promote", "w2"))
	all := []*daemon{m, w1, w2}
	for _, d := range all {
		waitVoters(t, d, 3, 3)
	}
	ackWrite(t, w2, "promote-w2")

	leader, rest := splitLeader(t, all)
	caPEM, certPEM, keyPEM := nodeCert(t, leader)
	// Raft id 1 is nobody's: NotFound means the call got past the gate.
	if err := raftCall(caPEM, certPEM, keyPEM, rest[0].addr); status.Code(err) != codes.NotFound {
		t.Fatalf("the leader's manager certificate on raft before its demotion: %v, want not found (past the gate)", err)
	}
	wantOK(t, rest[0].jaco("node", "demote", leader.name))
	for _, d := range rest {
		waitVoters(t, d, 2, 1)
	}
	waitWorker(t, rest[0], leader)
	if s := rest[0].status(); s.Leader == leader.status().NodeID {
		t.Fatalf("%s still leads after its demotion", leader.name)
	}
	ackWrite(t, rest[1], "demote-leader")
	err := raftCall(caPEM, certPEM, keyPEM, rest[0].addr)
	if w := reason.Of(err); status.Code(err) != codes.PermissionDenied || (w != reason.PermissionDenied && w != reason.NodeRemoved) {
		t.Fatalf("the demoted node's old manager certificate on raft: %v, want permission_denied or node_removed", err)
	}

	// The demoted node runs on as a worker across a restart.
	leader.restart()
	waitWorker(t, rest[0], leader)

	wantOK(t, rest[0].jaco("node", "demote", rest[1].name))
	waitVoters(t, rest[0], 1, 1)
	waitWorker(t, rest[0], rest[1])
	wantError(t, rest[0].jaco("node", "demote", rest[0].name), 1, "invalid_spec")
	ackWrite(t, rest[0], "last")

	// A demoted node can be promoted again, with a new raft id, without a
	// restart (rest[1] was demoted in this process).
	wantOK(t, rest[0].jaco("node", "promote", rest[1].name))
	waitVoters(t, rest[0], 2, 1)
	waitVoters(t, rest[1], 2, 1)
	ackWrite(t, rest[1], "promoted-again")
}

// TestGrowAndShrinkByRole grows a cluster to five managers by promotion
// and shrinks it to three by demotion, the leader included, checking the
// voter set against the policy and a write acknowledged at every step.
func TestGrowAndShrinkByRole(t *testing.T) {
	t.Parallel()
	m, ws := roleCluster(t, 4, "--heartbeat-period", "500ms")
	managers := []*daemon{m}
	for _, w := range ws {
		wantOK(t, m.jaco("node", "promote", w.name))
		managers = append(managers, w)
		for _, d := range managers {
			waitVoters(t, d, len(managers), voterTarget(len(managers)))
		}
		ackWrite(t, w, "promote-"+w.name)
	}
	for i := range 2 {
		var victim *daemon
		var stays []*daemon
		if i == 0 {
			victim, stays = splitLeader(t, managers)
		} else {
			_, rest := splitLeader(t, managers)
			victim = rest[len(rest)-1]
			stays = slices.DeleteFunc(slices.Clone(managers), func(d *daemon) bool { return d == victim })
		}
		wantOK(t, stays[0].jaco("node", "demote", victim.name))
		for _, d := range stays {
			waitVoters(t, d, len(stays), voterTarget(len(stays)))
		}
		waitWorker(t, stays[0], victim)
		ackWrite(t, stays[len(stays)-1], "demote-"+victim.name)
		managers = stays
	}
}

// TestCertificateRenewal: with 30 s certificates, a manager and a worker
// renew theirs before they expire and keep working past the first expiry.
func TestCertificateRenewal(t *testing.T) {
	t.Parallel()
	m, ws := roleCluster(t, 1, "--heartbeat-period", "500ms", "--cert-lifetime", "30s")
	w := ws[0]
	_, firstM, _ := nodeCert(t, m)
	_, firstW, _ := nodeCert(t, w)
	_, expiry, err := ca.CertValidity(firstW)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(expiry); life > 31*time.Second {
		t.Fatalf("worker certificate good for %v, want at most 30s", life)
	}
	// Past the first certificates' expiry, with margin.
	time.Sleep(time.Until(expiry) + 5*time.Second)
	for _, c := range []struct {
		d     *daemon
		first []byte
	}{{m, firstM}, {w, firstW}} {
		_, now, _ := nodeCert(t, c.d)
		if string(now) == string(c.first) {
			t.Fatalf("%s still has its first certificate", c.d.name)
		}
		if _, na, err := ca.CertValidity(now); err != nil || !na.After(time.Now()) {
			t.Fatalf("%s certificate valid until %v (%v), want a future time", c.d.name, na, err)
		}
		if !strings.Contains(c.d.log(), "node certificate renewed") {
			t.Fatalf("%s did not log a renewal", c.d.name)
		}
	}
	ackWrite(t, m, "after-expiry")
	// The worker still talks to the cluster: promote it and see it join.
	wantOK(t, m.jaco("node", "promote", w.name))
	waitVoters(t, m, 2, 1)
	eventually(t, 20*time.Second, func() error {
		if r := w.jaco("node", "ls"); r.code != 0 {
			return fmt.Errorf("node ls on the promoted worker: %s", r.stderr)
		}
		return nil
	})
}
