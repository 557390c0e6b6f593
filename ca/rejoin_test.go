package ca

import (
	"errors"
	"testing"
	"time"
)

// An expired certificate's key proves the rejoin of its node, and nothing
// else does: another node's key, another CA's certificate, or a request
// other than the one signed.
func TestVerifyRejoin(t *testing.T) {
	cluster := newTestCA(t, testCluster)
	// Expired the moment it is signed: the expiry is what VerifyRejoin
	// must overlook, the rest it must check.
	expired, oldKey, err := cluster.signer.Issue("node-a", RoleWorker, testCluster, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	// Certificates hold NotAfter to the second, truncated: already past.
	if !time.Now().After(mustParseCert(t, expired).NotAfter) {
		t.Fatal("the test certificate has not expired")
	}
	_, otherKey := cluster.issue(t, "node-b", RoleWorker)
	foreign := newTestCA(t, testCluster)
	foreignCert, foreignKey, err := foreign.signer.Issue("node-a", RoleWorker, testCluster, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	_, csrPEM, err := NewNodeKey("node-a")
	if err != nil {
		t.Fatal(err)
	}
	_, otherCSR, err := NewNodeKey("node-a")
	if err != nil {
		t.Fatal(err)
	}
	proof := func(key []byte) []byte {
		t.Helper()
		p, err := RejoinProof(key, csrPEM)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	id, err := VerifyRejoin(cluster.certPEM, expired, csrPEM, proof(oldKey))
	if err != nil {
		t.Fatalf("the expired certificate's own proof: %v", err)
	}
	if id.NodeID != "node-a" || id.Role != RoleWorker || id.ClusterID != testCluster {
		t.Errorf("identity %+v, want node-a, worker, %s", id, testCluster)
	}
	for _, tc := range []struct {
		name                 string
		cert, csr, signature []byte
	}{
		{"signed by another node's key", expired, csrPEM, proof(otherKey)},
		{"certificate of another CA", foreignCert, csrPEM, proof(foreignKey)},
		{"another request than the one signed", expired, otherCSR, proof(oldKey)},
		{"no proof", expired, csrPEM, nil},
		{"no certificate", nil, csrPEM, proof(oldKey)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := VerifyRejoin(cluster.certPEM, tc.cert, tc.csr, tc.signature); !errors.Is(err, ErrRejoinProof) {
				t.Errorf("VerifyRejoin = %v, want ErrRejoinProof", err)
			}
		})
	}
}
