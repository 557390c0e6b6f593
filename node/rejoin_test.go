package node

import (
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
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
