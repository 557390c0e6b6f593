package node

import (
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// A rejoin is for a worker that was in a cluster, asked on its own socket:
// the node's key signs for whoever asks. Everything else is refused before
// the key is touched or a manager dialled.
func TestRejoinRefusals(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, dir)
	local := localClient(t, dir)
	// The peer is never dialled: each refusal comes first.
	req := &api.JoinClusterRequest{Peer: "127.0.0.1:1", Token: "JACO1-x-y", Rejoin: true}
	if _, err := local.Cluster.Join(ctxT(t), req); reason.Of(err) != reason.InvalidSpec {
		t.Errorf("rejoin on an uninitialized node: %v, want invalid_spec", err)
	}
	resp, err := local.Cluster.Init(ctxT(t), &api.InitClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.Cluster.Join(ctxT(t), req); reason.Of(err) != reason.InvalidSpec {
		t.Errorf("rejoin on a manager: %v, want invalid_spec", err)
	}
	withToken := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer "+resp.OperatorToken)
	if _, err := api.NewClusterServiceClient(tcpCall(t, n, resp.OperatorToken)).Join(withToken, req); reason.Of(err) != reason.PermissionDenied {
		t.Errorf("rejoin over TCP: %v, want permission_denied", err)
	}
}

// In a CA rotation's reissue phase a worker's bundle may list the old CA
// first while the token names the new one: the rejoin's local check and
// the join response's check accept a token naming either CA of the
// bundle, and refuse one naming neither.
func TestBundleNamedDuringRotation(t *testing.T) {
	oldCA, _, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	newCA, _, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, err := ca.NewRootCA("cluster-2")
	if err != nil {
		t.Fatal(err)
	}
	fp := func(pem []byte) string {
		f, err := token.Fingerprint(pem)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, bundle := range [][]byte{ca.Bundle(oldCA, newCA), ca.Bundle(newCA, oldCA)} {
		for _, named := range [][]byte{oldCA, newCA} {
			if err := bundleNamed(bundle, fp(named)); err != nil {
				t.Errorf("a token naming one of the bundle's CAs refused: %v", err)
			}
		}
		if err := bundleNamed(bundle, fp(otherCA)); err == nil {
			t.Error("a token naming another cluster's CA accepted")
		}
	}
}
