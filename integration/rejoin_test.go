package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// rejoinFix is the command an expired worker's errors name.
const rejoinFix = "jaco node join --rejoin"

// waitCertExpired waits until d's certificate, which it cannot renew
// while stopped, has expired.
func waitCertExpired(t *testing.T, d *daemon) {
	t.Helper()
	_, certPEM, _ := nodeCert(t, d)
	_, notAfter, err := ca.CertValidity(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(notAfter) + 500*time.Millisecond)
}

// nodeIDOf is the node id d's certificate names.
func nodeIDOf(t *testing.T, d *daemon) string {
	t.Helper()
	_, certPEM, _ := nodeCert(t, d)
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("%s: no certificate", d.name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	id, err := ca.IdentityFromCert(cert)
	if err != nil {
		t.Fatal(err)
	}
	return id.NodeID
}

// TestRejoinExpiredWorker: a worker stopped until its certificate expired
// starts without reaching the cluster and says certificate_expired with
// the command to run; `jaco node join --rejoin` with a worker token brings
// it back under the same node id, and its agent re-adopts the replicas
// that kept running: the same replica ids, the same processes, and no
// replacement anywhere. The worker is off for less than the down grace
// (3 heartbeat periods of 20 s), so the leader never replaced its
// replicas; past that grace a returning node's replicas are stopped as
// surplus whatever its certificate (docs/operator-guide.md, "Workers").
// Refused rejoins — a removed node, a request signed with another node's
// key — change nothing and leave the token for the right one, which the
// rejoin then consumes.
func TestRejoinExpiredWorker(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m", "--heartbeat-period", "20s", "--cert-lifetime", "8s")
	w1, w2 := startDaemon(t, "w1"), startDaemon(t, "w2")
	m.initQuiet()
	for _, w := range []*daemon{w1, w2} {
		wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	}
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	waitReady(t, m, "w1", "w2")
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--replicas", "2",
		"--constraint", "node.hostname==w1", "-e", "OUT="+out, "--bundle", bundle))
	var before map[string]replica
	eventually(t, 30*time.Second, func() (err error) { before, err = m.runningReplicas("web", 2); return err })
	pids := map[string]int{}
	for id := range before {
		if pids[id] = replicaPid(out, id); !alive(pids[id]) {
			t.Fatalf("replica %s has no live process", id)
		}
	}
	w1ID, w2ID := nodeIDOf(t, w1), nodeIDOf(t, w2)

	t.Log("both workers stop until their certificates expire; w2 is removed meanwhile")
	w1.stop()
	w2.stop()
	wantOK(t, m.jaco("node", "remove", "--force", "w2"))
	waitCertExpired(t, w1)
	waitCertExpired(t, w2)
	w1.start()
	if log := w1.log(); !strings.Contains(log, "certificate_expired") || !strings.Contains(log, rejoinFix) {
		t.Fatalf("the expired worker's log does not say certificate_expired and %q", rejoinFix)
	}
	r := w1.jaco("status")
	wantError(t, r, 1, "certificate_expired")
	if !strings.Contains(r.stderr, rejoinFix) {
		t.Errorf("jaco status on the expired worker: %q, want it to name %q", r.stderr, rejoinFix)
	}
	t.Logf("jaco status on the expired worker says: %s", r.stderr)
	tok := m.joinToken("worker")
	r = w1.jaco("node", "join", "--peer", m.addr, "--token", tok)
	wantError(t, r, 1, "certificate_expired")
	if !strings.Contains(r.stderr, rejoinFix) {
		t.Errorf("a plain join on the expired worker: %q, want it to name %q", r.stderr, rejoinFix)
	}
	for id, pid := range pids {
		if !alive(pid) {
			t.Fatalf("replica %s died while its worker's certificate was expired", id)
		}
	}

	t.Log("refused: the removed w2, and w1's certificate with w2's key")
	w2.start()
	wantError(t, w2.jaco("node", "join", "--rejoin", "--peer", m.addr, "--token", tok), 1, "node_removed")
	if err := forgedRejoin(t, w1, w2, m.addr, tok); reason.Of(err) != reason.PermissionDenied {
		t.Fatalf("a rejoin as w1 signed with w2's key: %v, want permission_denied", err)
	}
	if nodes, err := m.tryNodes(); err != nil || len(nodes) != 2 {
		t.Fatalf("nodes after the refused rejoins: %+v (%v), want m and w1", nodes, err)
	}

	t.Log("w1 rejoins with the token the refusals left unused")
	renewals := strings.Count(w1.log(), "node certificate renewed")
	r = wantOK(t, w1.jaco("node", "join", "--rejoin", "--peer", m.addr, "--token", tok))
	if !strings.Contains(r.stdout, "as node "+w1ID) {
		t.Fatalf("rejoin printed %q, want node %s", r.stdout, w1ID)
	}
	if got := nodeIDOf(t, w1); got != w1ID {
		t.Fatalf("w1's new certificate names %s, want %s", got, w1ID)
	}
	// w1 was never marked down (off for less than the grace), so its
	// node status proves nothing: its agent must run the replicas it
	// adopted, and take new work from the leader.
	eventually(t, 30*time.Second, func() error {
		ls, err := decode[struct {
			Replicas []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"replicas"`
		}](w1.jaco("status", "--format", "json"))
		if err != nil {
			return err
		}
		running := 0
		for _, r := range ls.Replicas {
			if _, ok := before[r.ID]; ok && r.State == "running" {
				running++
			}
		}
		if running != len(before) {
			return fmt.Errorf("w1's agent runs %+v, want the replicas %v", ls.Replicas, before)
		}
		return nil
	})
	wantOK(t, m.jaco("service", "scale", "-d", "web=3"))
	eventually(t, 30*time.Second, func() error {
		after, err := m.runningReplicas("web", 3)
		if err != nil {
			return err
		}
		for id := range before {
			if r, ok := after[id]; !ok || r.Node != "w1" {
				return fmt.Errorf("replica %s is not running on w1 after the rejoin: %v", id, after)
			}
		}
		return nil
	})
	for id, pid := range pids {
		if now := replicaPid(out, id); now != pid || !alive(pid) {
			t.Fatalf("replica %s: process %d (alive %v) after the rejoin, want the same %d still running", id, now, alive(pid), pid)
		}
	}
	nodes, err := m.tryNodes()
	if err != nil || len(nodes) != 2 || !containsNode(nodes, w1ID, "w1") || containsNode(nodes, w2ID, "w2") {
		t.Fatalf("nodes after the rejoin: %+v (%v), want m and w1 under %s", nodes, err, w1ID)
	}
	wantError(t, w1.jaco("node", "join", "--rejoin", "--peer", m.addr, "--token", tok), 1, "token_consumed")
	// The new certificate renews as any other does (8 s lifetime here).
	eventually(t, 20*time.Second, func() error {
		if strings.Count(w1.log(), "node certificate renewed") == renewals {
			return fmt.Errorf("w1 has not renewed its new certificate yet")
		}
		return nil
	})
}

func containsNode(nodes []nodeEntry, id, hostname string) bool {
	for _, n := range nodes {
		if n.ID == id && n.Hostname == hostname {
			return true
		}
	}
	return false
}

// forgedRejoin is what a holder of a worker token and of victim's
// certificate (no secret: it is sent in every handshake) but only of
// thief's key can send: a rejoin as victim signed with thief's key.
func forgedRejoin(t *testing.T, victim, thief *daemon, addr, tok string) error {
	t.Helper()
	_, victimCert, _ := nodeCert(t, victim)
	_, _, thiefKey := nodeCert(t, thief)
	_, csrPEM, err := ca.NewNodeKey(nodeIDOf(t, victim))
	if err != nil {
		t.Fatal(err)
	}
	proof, err := ca.RejoinProof(thiefKey, csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := token.Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(token.PinnedTLSConfig(parsed.CAFingerprint))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = api.NewMembershipServiceClient(conn).Rejoin(ctx, &api.RejoinRequest{Token: tok, CsrPem: csrPEM, CertPem: victimCert, Proof: proof})
	return err
}

// TestExpiredManagerGuided: a manager whose certificate expired while it
// was off refuses to start, with certificate_expired and the commands of
// the ways back; being the last manager, it takes the one for that case,
// --force-new-cluster, which issues it a fresh certificate, and it serves
// again with its state.
func TestExpiredManagerGuided(t *testing.T) {
	t.Parallel()
	// The role check never comes round: the certificate is not renewed
	// while the manager runs, as it is not while it is off.
	m := startDaemon(t, "m", "--cert-lifetime", "3s", "--role-check-interval", "1h")
	m.initQuiet()
	wantOK(t, m.jaco("node", "update", "--label-add", "kept=yes", "m"))
	m.stop()
	waitCertExpired(t, m)

	args := append([]string{"--data-dir", m.dir, "--listen-addr", m.addr, "--node-name", m.name}, m.flags...)
	r := run(jacodBin, testEnv(), args...)
	if r.code == 0 || !strings.Contains(r.stderr, "error: certificate_expired: ") {
		t.Fatalf("jacod on an expired manager: exit %d, stderr %q; want it to stop with certificate_expired", r.code, r.stderr)
	}
	t.Logf("the expired manager says: %s", r.stderr)
	for _, fix := range []string{"jaco node remove --force m", "jaco node issue-join-token --role manager", "jacod --force-new-cluster"} {
		if !strings.Contains(r.stderr, fix) {
			t.Errorf("the expired manager's error does not name %q: %s", fix, r.stderr)
		}
	}

	t.Log("the last manager: --force-new-cluster once, with the default certificate lifetime")
	m.flags = []string{"--force-new-cluster"}
	m.start()
	eventually(t, 30*time.Second, func() error {
		if r := m.jaco("node", "inspect", "m"); r.err() != nil || !strings.Contains(r.stdout, "kept") {
			return fmt.Errorf("node inspect after the forced start: %v %q", r.err(), r.stdout)
		}
		return nil
	})
	_, certPEM, _ := nodeCert(t, m)
	if _, notAfter, err := ca.CertValidity(certPEM); err != nil || time.Until(notAfter) < time.Hour {
		t.Fatalf("the forced manager's certificate is valid until %v (%v), want a fresh one", notAfter, err)
	}
	if !strings.Contains(m.log(), "issued itself a fresh one") {
		t.Errorf("the forced manager did not log its new certificate")
	}
}
