package integration

import (
	"context"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// TestRemovedNodeCertificateRefused: the certificate of a removed node
// stays valid until it expires, but what it could do is refused. A removed
// worker's certificate opens no dispatcher session (node_removed, which
// tells an agent to stop) and, like any worker certificate, reaches no
// manager call (permission_denied); a removed manager's certificate
// speaks no raft (node_removed or permission_denied).
func TestRemovedNodeCertificateRefused(t *testing.T) {
	t.Parallel()
	ds := formManagers(t, 3)
	leader, followers := splitLeader(t, ds)
	gone := followers[0]
	w := startDaemon(t, "w1", "--node-name", "w1")
	wantOK(t, w.jaco("node", "join", "--peer", leader.addr, "--token", leader.joinToken("worker")))
	eventually(t, 30*time.Second, func() error {
		_, err := roleOf(leader, w)
		return err
	})
	wCA, wCert, wKey := nodeCert(t, w)
	mCA, mCert, mKey := nodeCert(t, gone)

	wantOK(t, leader.jaco("node", "remove", w.name))
	wantOK(t, leader.jaco("node", "remove", gone.name))
	waitVoters(t, leader, 2, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	worker, err := dialCert(wCA, wCert, wKey, leader.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	s, err := api.NewDispatcherServiceClient(worker).Session(ctx, &api.SessionRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if why := reason.Of(err); why != reason.NodeRemoved {
		t.Errorf("dispatcher session with a removed worker's certificate: %v (reason %q), want node_removed", err, why)
	}
	if _, err := api.NewControlServiceClient(worker).ListNodes(ctx, &api.ListNodesRequest{}); reason.Of(err) != reason.PermissionDenied {
		t.Errorf("control call with a removed worker's certificate: %v, want permission_denied", err)
	}

	err = raftCall(mCA, mCert, mKey, leader.addr)
	if why := reason.Of(err); why != reason.NodeRemoved && why != reason.PermissionDenied {
		t.Errorf("raft with a removed manager's certificate: %v (reason %q), want node_removed or permission_denied", err, why)
	}
	waitExit(t, gone, "node_removed") // a removed manager stops by itself
}
