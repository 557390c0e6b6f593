package roles

import (
	"crypto/x509"
	"testing"

	"github.com/jaco-project/jaco/ca"
)

// TestTrustSteps: the certificate is due for reissue exactly when the
// bundle's first CA did not issue it, and a bundle is accepted only when
// it keeps a CA of the one trusted now.
func TestTrustSteps(t *testing.T) {
	oldCert, oldKey, err := ca.NewRootCA("c1")
	if err != nil {
		t.Fatal(err)
	}
	newCert, _, err := ca.NewRootCA("c1")
	if err != nil {
		t.Fatal(err)
	}
	otherCert, _, err := ca.NewRootCA("c2")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ca.NewSigner(oldCert, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _, err := signer.Issue("node-1", ca.RoleWorker, "c1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !issuedBySigner(leaf, ca.Bundle(oldCert, newCert)) {
		t.Error("during TRUST a certificate of the old CA is due for reissue")
	}
	if issuedBySigner(leaf, ca.Bundle(newCert, oldCert)) {
		t.Error("during REISSUE a certificate of the old CA is not due for reissue")
	}
	parse := func(b []byte) []*x509.Certificate {
		cs, err := ca.ParseBundle(b)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for _, c := range []struct {
		name     string
		old, new []byte
		want     bool
	}{
		{"trust", oldCert, ca.Bundle(oldCert, newCert), true},
		{"reissue", ca.Bundle(oldCert, newCert), ca.Bundle(newCert, oldCert), true},
		{"drop", ca.Bundle(newCert, oldCert), newCert, true},
		{"another cluster's CA", oldCert, otherCert, false},
		{"a leap over the overlap", oldCert, newCert, false},
	} {
		if got := sharesCA(parse(c.new), parse(c.old)); got != c.want {
			t.Errorf("%s: sharesCA = %v, want %v", c.name, got, c.want)
		}
	}
}
