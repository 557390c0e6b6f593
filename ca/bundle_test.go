package ca

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/ca/token"
)

func TestBundleIssuerAndFingerprint(t *testing.T) {
	oldCert, oldKey := mustRootCA(t)
	newCert, newKey := mustRootCA(t)
	signer, err := NewSigner(oldCert, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _, err := signer.Issue("node-1", RoleWorker, "cluster-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	both := Bundle(oldCert, newCert)
	cas, err := ParseBundle(both)
	if err != nil || len(cas) != 2 {
		t.Fatalf("ParseBundle of two = %d, %v", len(cas), err)
	}
	oldFP, _ := token.Fingerprint(oldCert)
	if fp, err := IssuerFingerprint(leaf, Bundle(newCert, oldCert)); err != nil || fp != oldFP {
		t.Fatalf("IssuerFingerprint = %q, %v; want the old CA's", fp, err)
	}
	if fp, err := IssuerFingerprint(leaf, newCert); err != nil || fp != "" {
		t.Fatalf("IssuerFingerprint against another CA = %q, %v; want none", fp, err)
	}
	a, _ := BundleFingerprint(both)
	b, _ := BundleFingerprint(Bundle(newCert, oldCert))
	if a == b || a == "" {
		t.Fatal("bundles in another order have the same fingerprint")
	}
	if _, err := ParseBundle([]byte("nothing")); err == nil {
		t.Fatal("ParseBundle of no certificate succeeded")
	}
	// A node trusting both verifies a certificate of either CA; one
	// trusting the new CA alone refuses the old CA's.
	newSigner, err := NewSigner(newCert, newKey)
	if err != nil {
		t.Fatal(err)
	}
	newLeaf, _, err := newSigner.Issue("node-2", RoleWorker, "cluster-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	verifies := func(bundle, leafPEM []byte) bool {
		pool, err := TrustPool(bundle)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(leafPEM)
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		return err == nil
	}
	if !verifies(both, leaf) || !verifies(both, newLeaf) {
		t.Fatal("a pool of both CAs refuses a certificate of one of them")
	}
	if verifies(newCert, leaf) {
		t.Fatal("a pool of the new CA alone accepts the old CA's certificate")
	}
}

func mustRootCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

func TestCheckCA(t *testing.T) {
	cert, key := mustRootCA(t)
	_, otherKey := mustRootCA(t)
	s, err := NewSigner(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, leafKey, err := s.Issue("node-1", RoleManager, "cluster-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		name      string
		cert, key []byte
		now       time.Time
		want      string // in the error; "" for none
	}{
		{"good", cert, key, now, ""},
		{"another key", cert, otherKey, now, "does not match"},
		{"a node certificate", leaf, leafKey, now, "not a CA"},
		{"two certificates", Bundle(cert, cert), key, now, "exactly 1"},
		{"expiring", cert, key, now.Add(RootCAValidity - time.Hour), "valid from"},
		{"not yet valid", cert, key, now.Add(-time.Hour), "valid from"},
		{"no certificate", []byte("junk"), key, now, "no PEM"},
	} {
		err := CheckCA(c.cert, c.key, c.now)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: CheckCA = %v, want %q", c.name, err, c.want)
		}
	}
}
