package carotation

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

func newCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

// report makes node n report what a node holding bundle and a
// certificate of issuer would.
func report(t *testing.T, n *api.Node, bundle, issuer []byte) {
	t.Helper()
	trust, err := ca.BundleFingerprint(bundle)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := token.Fingerprint(issuer)
	if err != nil {
		t.Fatal(err)
	}
	Record(n, trust, fp)
}

// TestRotationPhases walks a rotation through its phases: each waits for
// every node, the bundle lists the signing CA first, the new CA signs
// from REISSUE on, and the old CA is gone at the end.
func TestRotationPhases(t *testing.T) {
	oldCert, oldKey := newCA(t)
	newCert, newKey := newCA(t)
	c := &api.Cluster{Id: "cluster-1", CaCertPem: oldCert, CaKeyPem: oldKey}
	nodes := []*api.Node{{Id: "a", Hostname: "a"}, {Id: "b", Hostname: "b"}}
	for _, n := range nodes {
		report(t, n, Bundle(c), oldCert)
	}
	if moved, err := Advance(c, nodes); err != nil || moved {
		t.Fatalf("Advance without a rotation = %v, %v", moved, err)
	}
	if err := Begin(c, newCert, newKey, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := Begin(c, newCert, newKey, false, time.Now()); !errors.Is(err, ErrInProgress) {
		t.Fatalf("a second Begin = %v, want ErrInProgress", err)
	}
	if want := ca.Bundle(oldCert, newCert); !bytes.Equal(Bundle(c), want) {
		t.Fatalf("TRUST bundle is not old then new")
	}
	if p := Progress(c, nodes); p.Phase != "trust" || p.Done != 0 || p.Nodes != 2 || len(p.Waiting) != 2 {
		t.Fatalf("progress at start = %+v", p)
	}

	report(t, nodes[0], Bundle(c), oldCert)
	if moved, _ := Advance(c, nodes); moved {
		t.Fatal("TRUST ended with a node that has not reported")
	}
	if p := Progress(c, nodes); p.Done != 1 || len(p.Waiting) != 1 || p.Waiting[0] != "b" {
		t.Fatalf("progress with one node done = %+v", p)
	}
	report(t, nodes[1], Bundle(c), oldCert)
	if moved, err := Advance(c, nodes); err != nil || !moved {
		t.Fatalf("Advance with every node trusting = %v, %v", moved, err)
	}
	if c.CaRotation.Phase != api.CARotation_PHASE_REISSUE || !bytes.Equal(c.CaCertPem, newCert) || !bytes.Equal(c.CaKeyPem, newKey) {
		t.Fatal("REISSUE does not sign with the new CA")
	}
	if want := ca.Bundle(newCert, oldCert); !bytes.Equal(Bundle(c), want) {
		t.Fatal("REISSUE bundle is not new then old")
	}

	// Trusting the REISSUE bundle is not enough: the certificate counts.
	for _, n := range nodes {
		report(t, n, Bundle(c), oldCert)
	}
	if moved, _ := Advance(c, nodes); moved {
		t.Fatal("REISSUE ended with certificates of the old CA")
	}
	for _, n := range nodes {
		report(t, n, Bundle(c), newCert)
	}
	if p := Progress(c, nodes); p.Phase != "reissue" || p.Done != 2 {
		t.Fatalf("progress with every node reissued = %+v", p)
	}
	if moved, err := Advance(c, nodes); err != nil || !moved {
		t.Fatalf("Advance with every node reissued = %v, %v", moved, err)
	}
	if c.CaRotation.Phase != api.CARotation_PHASE_DROP || !bytes.Equal(Bundle(c), ca.Bundle(newCert)) {
		t.Fatal("DROP does not have nodes trust the new CA alone")
	}
	if moved, _ := Advance(c, nodes); moved {
		t.Fatal("DROP ended with nodes that still trust the old CA")
	}
	report(t, nodes[0], Bundle(c), newCert)
	if p := Progress(c, nodes); p.Phase != "drop" || p.Done != 1 || p.Waiting[0] != "b" {
		t.Fatalf("progress with one node trusting the new CA alone = %+v", p)
	}
	report(t, nodes[1], Bundle(c), newCert)
	if moved, err := Advance(c, nodes); err != nil || !moved {
		t.Fatalf("Advance with every node trusting the new CA alone = %v, %v", moved, err)
	}
	if c.CaRotation != nil || !bytes.Equal(Bundle(c), ca.Bundle(newCert)) || Progress(c, nodes) != nil {
		t.Fatal("the rotation did not end with the new CA alone")
	}
}

// TestRecordIgnoresSilence: a node that reports nothing has not moved.
func TestRecordIgnoresSilence(t *testing.T) {
	n := &api.Node{TrustFingerprint: "t", CertCaFingerprint: "c"}
	if Record(n, "", "") || n.TrustFingerprint != "t" || n.CertCaFingerprint != "c" {
		t.Fatal("an empty report changed the node")
	}
	if Record(n, "t", "c") {
		t.Fatal("the same report counted as a change")
	}
	if !Record(n, "t2", "") || n.TrustFingerprint != "t2" || n.CertCaFingerprint != "c" {
		t.Fatal("a new trust report was not recorded alone")
	}
}
