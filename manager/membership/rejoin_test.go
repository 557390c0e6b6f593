package membership

import (
	"context"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// expiredNode is a node of the admitServer's cluster whose certificate
// expired, with its key.
type expiredNode struct {
	id              string
	certPEM, keyPEM []byte
}

func expiredCert(t *testing.T, st *store.Store, nodeID, role string) expiredNode {
	t.Helper()
	var c *api.Cluster
	st.View(func(tx store.ReadTx) { c = tx.Cluster() })
	signer, err := ca.NewSigner(c.CaCertPem, c.CaKeyPem)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := signer.Issue(nodeID, role, c.Id, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	return expiredNode{id: nodeID, certPEM: certPEM, keyPEM: keyPEM}
}

// rejoinRequest is the request e's daemon sends, its proof signed with
// signWith (e's own key unless another is given).
func rejoinRequest(t *testing.T, e expiredNode, token string, signWith []byte) *api.RejoinRequest {
	t.Helper()
	_, csrPEM, err := ca.NewNodeKey(e.id)
	if err != nil {
		t.Fatal(err)
	}
	if signWith == nil {
		signWith = e.keyPEM
	}
	proof, err := ca.RejoinProof(signWith, csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &api.RejoinRequest{Token: token, CsrPem: csrPEM, CertPem: e.certPEM, Proof: proof}
}

func TestRejoin(t *testing.T) {
	s, r, st := admitServer(t)
	storetest.Create(t, st,
		&api.Node{Id: "w1", Meta: &api.Meta{}, Hostname: "worker-1", Address: "w1:7000", Role: api.NodeRole_NODE_ROLE_WORKER},
		&api.Node{Id: "w2", Meta: &api.Meta{}, Hostname: "worker-2", Address: "w2:7000", Role: api.NodeRole_NODE_ROLE_WORKER})
	w1 := expiredCert(t, st, "w1", ca.RoleWorker)
	w2 := expiredCert(t, st, "w2", ca.RoleWorker)
	token := issue(t, st, api.NodeRole_NODE_ROLE_WORKER)
	before := nodes(st)

	for _, tc := range []struct {
		name, want string
		req        *api.RejoinRequest
	}{
		// w2's holder has w1's certificate (it is no secret) but not
		// w1's key: it cannot take w1's id.
		{"another node's certificate", reason.PermissionDenied, rejoinRequest(t, w1, token, w2.keyPEM)},
		{"a removed node", reason.NodeRemoved, rejoinRequest(t, expiredCert(t, st, "gone", ca.RoleWorker), token, nil)},
		{"a manager", reason.InvalidSpec, rejoinRequest(t, expiredCert(t, st, "n2", ca.RoleManager), token, nil)},
		{"a manager token", reason.TokenInvalid, rejoinRequest(t, w1, issue(t, st, api.NodeRole_NODE_ROLE_MANAGER), nil)},
		{"an unknown token", reason.TokenInvalid, rejoinRequest(t, w1, "JACO1-x-y", nil)},
		{"no proof", reason.InvalidSpec, &api.RejoinRequest{Token: token, CsrPem: csr(t), CertPem: w1.certPEM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Rejoin(context.Background(), tc.req); reason.Of(err) != tc.want {
				t.Errorf("Rejoin: %v, want %s", err, tc.want)
			}
		})
	}
	if after := nodes(st); len(after) != len(before) {
		t.Fatalf("refused rejoins changed the nodes: %v, were %v", after, before)
	}
	if len(r.calls) != 0 {
		t.Fatalf("rejoins changed raft: %v", r.calls)
	}

	// The token survived the refusals and admits w1 under its own id.
	resp, err := s.Rejoin(context.Background(), rejoinRequest(t, w1, token, nil))
	if err != nil {
		t.Fatalf("w1's own rejoin: %v", err)
	}
	if _, notAfter, err := ca.CertValidity(resp.CertPem); err != nil || !notAfter.After(time.Now()) {
		t.Fatalf("the new certificate is valid until %v (%v), want a future time", notAfter, err)
	}
	if resp.NodeId != "w1" || resp.Role != api.NodeRole_NODE_ROLE_WORKER || len(resp.Members) == 0 {
		t.Fatalf("rejoin answered %v, want w1 as a worker with the managers", resp)
	}
	if _, err := s.Rejoin(context.Background(), rejoinRequest(t, w2, token, nil)); reason.Of(err) != reason.TokenConsumed {
		t.Fatalf("a second rejoin with the token: %v, want token_consumed", err)
	}
}

func nodes(st *store.Store) []string {
	var ids []string
	st.View(func(tx store.ReadTx) {
		for _, n := range tx.ListNodes() {
			ids = append(ids, n.Id+"@"+n.Address)
		}
	})
	return ids
}
