package node

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// Adversarial callers on the node port (docs/design.md §10): each is
// refused, at the TLS handshake when what it presents does not verify, else
// by the access policy with its reason word.

// initCluster starts a daemon on a fresh dir and inits a cluster on it.
func initCluster(t *testing.T) (*Node, *api.InitClusterResponse, *api.Cluster) {
	t.Helper()
	dir := t.TempDir()
	n, _ := startNode(t, dir)
	resp, err := localClient(t, dir).Cluster.Init(ctxT(t), &api.InitClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return n, resp, n.Manager().Cluster()
}

// issue signs a certificate with cluster's CA, as a manager would.
func issue(t *testing.T, cluster *api.Cluster, nodeID, role, clusterID string, ttl time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	s, err := ca.NewSigner(cluster.CaCertPem, cluster.CaKeyPem)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err = s.Issue(nodeID, role, clusterID, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// certTLS is the client side of node-to-node TLS with the given
// certificate, trusting the CA in trustPEM.
func certTLS(t *testing.T, trustPEM, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	cfg, err := ca.ClientTLSConfig(trustPEM, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{"h2"}
	return cfg
}

// handshakeRefusal dials addr and says how the server refused the
// connection, or nil when it did not within a few seconds. In TLS 1.3 the
// server checks the client certificate after the client has finished its
// handshake, so its alert arrives on the first read.
func handshakeRefusal(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // the server waits for the HTTP/2 preface: accepted
	}
	return err
}

func TestWorkerCertificateGetsNoManagerCall(t *testing.T) {
	n, _, cluster := initCluster(t)
	certPEM, keyPEM := issue(t, cluster, "some-worker", ca.RoleWorker, cluster.Id, time.Hour)
	conn, err := grpc.NewClient(n.TCPAddr().String(),
		grpc.WithTransportCredentials(credentials.NewTLS(certTLS(t, cluster.CaCertPem, certPEM, keyPEM))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := ctxT(t)

	cases := []struct {
		name string
		call func() error
	}{
		{"Control.ListNodes", func() error {
			_, err := api.NewControlServiceClient(conn).ListNodes(ctx, &api.ListNodesRequest{})
			return err
		}},
		{"Control.IssueJoinToken", func() error {
			_, err := api.NewControlServiceClient(conn).IssueJoinToken(ctx, &api.IssueJoinTokenRequest{Role: api.NodeRole_NODE_ROLE_MANAGER})
			return err
		}},
		{"Control.RemoveNode", func() error {
			_, err := api.NewControlServiceClient(conn).RemoveNode(ctx, &api.RemoveNodeRequest{Node: n.Manager().NodeID()})
			return err
		}},
		{"Control.UpdateCluster", func() error {
			on := true
			_, err := api.NewControlServiceClient(conn).UpdateCluster(ctx, &api.UpdateClusterRequest{Autolock: &on})
			return err
		}},
		{"Raft.ProcessRaftMessage", func() error {
			_, err := api.NewRaftServiceClient(conn).ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{})
			return err
		}},
		{"Raft.RaftMessages", func() error {
			s, err := api.NewRaftServiceClient(conn).RaftMessages(ctx)
			if err != nil {
				return err
			}
			return s.RecvMsg(new(api.ProcessRaftMessageResponse))
		}},
		{"Raft.ResolveAddress", func() error {
			_, err := api.NewRaftServiceClient(conn).ResolveAddress(ctx, &api.ResolveAddressRequest{RaftId: 1})
			return err
		}},
		{"Admission.Admit", func() error {
			_, err := api.NewAdmissionServiceClient(conn).Admit(ctx, &api.AdmitRequest{NodeId: "intruder"})
			return err
		}},
		{"Backup.Backup", func() error {
			s, err := api.NewBackupServiceClient(conn).Backup(ctx, &api.BackupRequest{})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
		{"Cluster.Init", func() error {
			_, err := api.NewClusterServiceClient(conn).Init(ctx, &api.InitClusterRequest{})
			return err
		}},
		{"Node.Unlock", func() error {
			_, err := api.NewNodeServiceClient(conn).Unlock(ctx, &api.UnlockNodeRequest{UnlockKey: "JACOKEY1-x"})
			return err
		}},
	}
	for _, tc := range cases {
		if err := tc.call(); reason.Of(err) != reason.PermissionDenied {
			t.Errorf("%s with a worker certificate: %v (reason %q), want permission_denied", tc.name, err, reason.Of(err))
		}
	}

	// The certificate itself is good: it reaches the dispatcher, which
	// refuses a node the cluster does not hold (never joined, or removed).
	s, err := api.NewDispatcherServiceClient(conn).Session(ctx, &api.SessionRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if reason.Of(err) != reason.NodeRemoved {
		t.Errorf("session of a node the cluster does not hold: %v (reason %q), want node_removed", err, reason.Of(err))
	}
}

func TestExpiredCertificateRefusedAtHandshake(t *testing.T) {
	n, _, cluster := initCluster(t)
	// Issued for a nanosecond: expired before it is presented.
	certPEM, keyPEM := issue(t, cluster, "expired-manager", ca.RoleManager, cluster.Id, time.Nanosecond)
	err := handshakeRefusal(t, n.TCPAddr().String(), certTLS(t, cluster.CaCertPem, certPEM, keyPEM))
	if err == nil || !strings.Contains(err.Error(), "expired certificate") {
		t.Fatalf("handshake with an expired manager certificate: %v, want refused naming the expired certificate", err)
	}
	// The same CA's certificate still in date is accepted: what was
	// refused is the expiry.
	certPEM, keyPEM = issue(t, cluster, "good-manager", ca.RoleManager, cluster.Id, time.Hour)
	if err := handshakeRefusal(t, n.TCPAddr().String(), certTLS(t, cluster.CaCertPem, certPEM, keyPEM)); err != nil {
		t.Fatalf("handshake with a certificate in date: %v", err)
	}
}

func TestOtherClusterRefused(t *testing.T) {
	a, respA, clusterA := initCluster(t)
	_, respB, clusterB := initCluster(t)

	// A certificate of B's CA, whether it names B or claims A's cluster,
	// does not verify against A's CA.
	for _, claim := range []string{clusterB.Id, clusterA.Id} {
		certPEM, keyPEM := issue(t, clusterB, "b-manager", ca.RoleManager, claim, time.Hour)
		err := handshakeRefusal(t, a.TCPAddr().String(), certTLS(t, clusterA.CaCertPem, certPEM, keyPEM))
		if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
			t.Errorf("certificate of another cluster's CA (claiming cluster %s): %v, want refused naming the unknown CA", claim, err)
		}
	}

	// B's operator token over a connection to A (A's CA pinned, as the
	// CLI does from A's token) is refused.
	conn := tcpCall(t, a, respA.OperatorToken)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer "+respB.OperatorToken)
	_, err := api.NewControlServiceClient(conn).ListNodes(ctx, &api.ListNodesRequest{})
	if reason.Of(err) != reason.PermissionDenied {
		t.Fatalf("another cluster's operator token: %v (reason %q), want permission_denied", err, reason.Of(err))
	}
	// And B's token pins B's CA: the CLI refuses A's server before sending it.
	_, err = api.NewControlServiceClient(tcpCall(t, a, respB.OperatorToken)).ListNodes(ctx, &api.ListNodesRequest{})
	if err == nil || reason.Of(err) == reason.PermissionDenied {
		t.Fatalf("another cluster's token with its own pin: %v, want the TLS pin to refuse the server", err)
	}
}

// TestNodePortIsTLS13Only: a TLS 1.2 client cannot handshake, before init
// (throwaway certificate) nor after.
func TestNodePortIsTLS13Only(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, dir)
	// Verification is beside the point here: only the version is.
	tls12 := &tls.Config{MaxVersion: tls.VersionTLS12, InsecureSkipVerify: true, NextProtos: []string{"h2"}}
	check := func(when string) {
		t.Helper()
		err := handshakeRefusal(t, n.TCPAddr().String(), tls12)
		if err == nil || !strings.Contains(err.Error(), "protocol version") {
			t.Errorf("TLS 1.2 handshake %s: %v, want refused (protocol version)", when, err)
		}
		tls13 := tls12.Clone()
		tls13.MaxVersion, tls13.MinVersion = tls.VersionTLS13, tls.VersionTLS13
		if err := handshakeRefusal(t, n.TCPAddr().String(), tls13); err != nil {
			t.Errorf("TLS 1.3 handshake %s: %v", when, err)
		}
	}
	check("before init")
	if _, err := localClient(t, dir).Cluster.Init(context.Background(), &api.InitClusterRequest{}); err != nil {
		t.Fatal(err)
	}
	check("after init")
}
