package node

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
)

// startNode runs a daemon on dir until the test ends or stop is called.
func startNode(t *testing.T, dir string) (n *Node, stop func()) {
	t.Helper()
	return startNodeWith(t, Config{DataDir: dir})
}

// startNodeWith is startNode with more of the config set; the node name
// and logger are the test's, and so is the listen address unless cfg
// gives one.
func startNodeWith(t *testing.T, cfg Config) (n *Node, stop func()) {
	t.Helper()
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:0"
	}
	cfg.NodeName, cfg.Logger = "node-under-test", slog.New(slog.DiscardHandler)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return n, stop
}

func localClient(t *testing.T, dir string) *client.Client {
	t.Helper()
	c, err := client.New(client.WithSocket(datadir.Dir(dir).Socket()), client.WithoutRetry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestUninitializedRefusesAllButInitJoinStatus(t *testing.T) {
	dir := t.TempDir()
	startNode(t, dir)
	c := localClient(t, dir)
	st, err := c.Cluster.Status(ctxT(t), &api.ClusterStatusRequest{})
	if err != nil || st.State != api.NodeState_NODE_STATE_UNINITIALIZED {
		t.Fatalf("Status = %v, %v; want uninitialized", st, err)
	}
	_, err = c.Control.ListNodes(ctxT(t), &api.ListNodesRequest{})
	if got := reason.Of(err); got != reason.ClusterUninitialized {
		t.Fatalf("ListNodes before init: reason %q (%v), want cluster_uninitialized", got, err)
	}
}

func TestInitPersistsAndSealsSecrets(t *testing.T) {
	dir := t.TempDir()
	n, stop := startNode(t, dir)
	c := localClient(t, dir)
	resp, err := c.Cluster.Init(ctxT(t), &api.InitClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cluster := n.Manager().Cluster()
	if cluster == nil || cluster.Id != resp.ClusterId || len(cluster.CaKeyPem) == 0 {
		t.Fatalf("cluster object after init: %v", cluster)
	}
	tok, err := token.Parse(resp.OperatorToken)
	if err != nil {
		t.Fatal(err)
	}
	if !token.HashMatches(cluster.OperatorTokenHash, tok) {
		t.Fatal("stored hash does not match the printed token")
	}
	stop()

	secrets := map[string][]byte{
		"CA private key": cluster.CaKeyPem,
		"operator token": []byte(resp.OperatorToken),
		"token secret":   []byte(tok.Secret),
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for what, secret := range secrets {
			if bytes.Contains(b, secret) {
				t.Errorf("%s is in clear in %s", what, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	n2, _ := startNode(t, dir)
	if n2.State() != api.NodeState_NODE_STATE_READY {
		t.Fatalf("restarted node state %v, want ready", n2.State())
	}
	if err := n2.Manager().WaitReady(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := n2.Manager().Cluster(); !proto.Equal(got, cluster) {
		t.Fatalf("cluster after restart differs:\n got %v\nwant %v", got, cluster)
	}
}

// tcpCall dials the node over TLS, pinning the CA named in operatorToken,
// as the CLI does; the caller adds metadata per call.
func tcpCall(t *testing.T, n *Node, operatorToken string) *grpc.ClientConn {
	t.Helper()
	tok, err := token.Parse(operatorToken)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(n.TCPAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(token.PinnedTLSConfig(tok.CAFingerprint))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestTCPCallersGetOnlyWhatTheyProve(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, dir)
	resp, err := localClient(t, dir).Cluster.Init(ctxT(t), &api.InitClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conn := tcpCall(t, n, resp.OperatorToken)
	withToken := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer "+resp.OperatorToken)

	if _, err := api.NewControlServiceClient(conn).ListNodes(withToken, &api.ListNodesRequest{}); err != nil {
		t.Fatalf("operator ListNodes: %v", err)
	}
	cases := []struct {
		name string
		call func() error
	}{
		{"control without token", func() error {
			_, err := api.NewControlServiceClient(conn).ListNodes(ctxT(t), &api.ListNodesRequest{})
			return err
		}},
		{"forwarded identity from a non-manager", func() error {
			ctx := metadata.AppendToOutgoingContext(withToken, identity.ForwardedKey, identity.Identity{Kind: identity.Local}.Encode())
			_, err := api.NewControlServiceClient(conn).ListNodes(ctx, &api.ListNodesRequest{})
			return err
		}},
		{"raft traffic from an operator", func() error {
			_, err := api.NewRaftServiceClient(conn).ResolveAddress(withToken, &api.ResolveAddressRequest{RaftId: 1})
			return err
		}},
		{"init over tcp", func() error {
			_, err := api.NewClusterServiceClient(conn).Init(withToken, &api.InitClusterRequest{})
			return err
		}},
		// A login link signs in as the operator: the socket's user only.
		{"dashboard login over tcp", func() error {
			_, err := api.NewNodeServiceClient(conn).DashboardLogin(withToken, &api.DashboardLoginRequest{})
			return err
		}},
		// The unlock key must never travel over TCP, even with the token.
		{"unlock over tcp", func() error {
			_, err := api.NewNodeServiceClient(conn).Unlock(withToken, &api.UnlockNodeRequest{UnlockKey: "JACOKEY1-x"})
			return err
		}},
	}
	for _, tc := range cases {
		if got := reason.Of(tc.call()); got != reason.PermissionDenied {
			t.Errorf("%s: reason %q, want permission_denied", tc.name, got)
		}
	}
}
