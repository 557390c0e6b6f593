package ca

import (
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/cfssl/csr"

	"github.com/jaco-project/jaco/ca/token"
)

const testCluster = "3f1c2b7e-0000-4000-8000-000000000001"

// testCA is a cluster CA with its signer.
type testCA struct {
	certPEM, keyPEM []byte
	signer          *Signer
}

func newTestCA(t *testing.T, clusterID string) testCA {
	t.Helper()
	certPEM, keyPEM, err := NewRootCA(clusterID)
	if err != nil {
		t.Fatalf("NewRootCA: %v", err)
	}
	s, err := NewSigner(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return testCA{certPEM: certPEM, keyPEM: keyPEM, signer: s}
}

// issue makes a key for nodeID and has the CA sign it.
func (c testCA) issue(t *testing.T, nodeID, role string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := c.signer.Issue(nodeID, role, testCluster, 0)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return certPEM, keyPEM
}

func mustParseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestNewRootCA(t *testing.T) {
	c := newTestCA(t, testCluster)
	cert := mustParseCert(t, c.certPEM)
	if want := "jaco cluster CA " + testCluster; cert.Subject.CommonName != want {
		t.Errorf("CN = %q, want %q", cert.Subject.CommonName, want)
	}
	if !cert.IsCA || cert.MaxPathLen != 0 || !cert.MaxPathLenZero {
		t.Errorf("IsCA=%v MaxPathLen=%d MaxPathLenZero=%v, want a CA with path length 0",
			cert.IsCA, cert.MaxPathLen, cert.MaxPathLenZero)
	}
	if cert.PublicKeyAlgorithm != x509.Ed25519 || cert.SignatureAlgorithm != x509.PureEd25519 {
		t.Errorf("key %v signature %v, want Ed25519", cert.PublicKeyAlgorithm, cert.SignatureAlgorithm)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if validity := cert.NotAfter.Sub(cert.NotBefore); validity < RootCAValidity || validity > RootCAValidity+time.Hour {
		t.Errorf("validity %s, want about %s", validity, RootCAValidity)
	}
	if !strings.Contains(string(c.keyPEM), "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("CA key is not a PKCS #8 PEM block")
	}
	if _, _, err := NewRootCA(""); err == nil {
		t.Error("NewRootCA(\"\") succeeded")
	}
}

func TestNewSignerRefusesMismatchedKey(t *testing.T) {
	a := newTestCA(t, testCluster)
	b := newTestCA(t, testCluster)
	if _, err := NewSigner(a.certPEM, b.keyPEM); err == nil {
		t.Error("NewSigner accepted another CA's key")
	}
	leafPEM, leafKeyPEM := a.issue(t, "node-1", RoleWorker)
	if _, err := NewSigner(leafPEM, leafKeyPEM); err == nil {
		t.Error("NewSigner accepted a non-CA certificate")
	}
}

func TestSign(t *testing.T) {
	c := newTestCA(t, testCluster)
	keyPEM, csrPEM, err := NewNodeKey("node-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseKeyPEM(keyPEM); err != nil {
		t.Fatalf("node key: %v", err)
	}
	certPEM, err := c.signer.Sign(csrPEM, "node-1", RoleManager, testCluster, 0, "node-1.example", "198.18.0.7")
	if err != nil {
		t.Fatal(err)
	}
	cert := mustParseCert(t, certPEM)

	if cert.Subject.CommonName != "node-1" ||
		!slices.Equal(cert.Subject.OrganizationalUnit, []string{RoleManager}) ||
		!slices.Equal(cert.Subject.Organization, []string{testCluster}) {
		t.Errorf("subject %v", cert.Subject)
	}
	if !slices.Equal(cert.DNSNames, []string{"node-1", "node-1.example"}) {
		t.Errorf("DNS SANs %v", cert.DNSNames)
	}
	if len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("198.18.0.7")) {
		t.Errorf("IP SANs %v", cert.IPAddresses)
	}
	if cert.IsCA {
		t.Error("node certificate is a CA")
	}
	if cert.PublicKeyAlgorithm != x509.Ed25519 {
		t.Errorf("public key algorithm %v", cert.PublicKeyAlgorithm)
	}
	if ttl := time.Until(cert.NotAfter); ttl < DefaultCertTTL-time.Minute || ttl > DefaultCertTTL {
		t.Errorf("remaining validity %s, want about %s", ttl, DefaultCertTTL)
	}
	if time.Since(cert.NotBefore) < time.Minute {
		t.Errorf("NotBefore %s is not backdated", cert.NotBefore)
	}

	roots := x509.NewCertPool()
	roots.AddCert(mustParseCert(t, c.certPEM))
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-1", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
}

func TestSignTTL(t *testing.T) {
	c := newTestCA(t, testCluster)
	_, csrPEM, err := NewNodeKey("node-1")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := c.signer.Sign(csrPEM, "node-1", RoleWorker, testCluster, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := time.Until(mustParseCert(t, certPEM).NotAfter); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("remaining validity %s, want about 1h", ttl)
	}

	// A certificate never outlives its CA.
	certPEM, err = c.signer.Sign(csrPEM, "node-1", RoleWorker, testCluster, 2*RootCAValidity)
	if err != nil {
		t.Fatal(err)
	}
	if got, ca := mustParseCert(t, certPEM).NotAfter, mustParseCert(t, c.certPEM).NotAfter; got.After(ca) {
		t.Errorf("NotAfter %s is after the CA's %s", got, ca)
	}
}

// A CSR asking for another identity, SANs and the CA bit gets none of them.
func TestSignOverridesCSR(t *testing.T) {
	c := newTestCA(t, testCluster)
	priv, _, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := csr.Generate(priv, &csr.CertificateRequest{
		CN:    "node-2",
		Names: []csr.Name{{O: "other-cluster", OU: RoleManager, C: "XX", L: "Nowhere"}},
		Hosts: []string{"node-2", "10.0.0.1"},
		CA:    &csr.CAConfig{},
	})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := c.signer.Sign(csrPEM, "node-1", RoleWorker, testCluster, 0)
	if err != nil {
		t.Fatal(err)
	}
	cert := mustParseCert(t, certPEM)
	want := "CN=node-1,OU=worker,O=" + testCluster
	if got := cert.Subject.String(); got != want {
		t.Errorf("subject %q, want %q", got, want)
	}
	if !slices.Equal(cert.DNSNames, []string{"node-1"}) || len(cert.IPAddresses) != 0 {
		t.Errorf("SANs %v %v, want only node-1", cert.DNSNames, cert.IPAddresses)
	}
	if cert.IsCA {
		t.Error("CSR obtained a CA certificate")
	}
}

func TestSignRefusesBadInput(t *testing.T) {
	c := newTestCA(t, testCluster)
	_, csrPEM, err := NewNodeKey("node-1")
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"empty node id": func() error { _, err := c.signer.Sign(csrPEM, "", RoleWorker, testCluster, 0); return err },
		"bad node id":   func() error { _, err := c.signer.Sign(csrPEM, "a|b", RoleWorker, testCluster, 0); return err },
		"bad role":      func() error { _, err := c.signer.Sign(csrPEM, "node-1", "admin", testCluster, 0); return err },
		"empty cluster": func() error { _, err := c.signer.Sign(csrPEM, "node-1", RoleWorker, "", 0); return err },
		"negative ttl": func() error {
			_, err := c.signer.Sign(csrPEM, "node-1", RoleWorker, testCluster, -time.Hour)
			return err
		},
		"garbage CSR": func() error {
			_, err := c.signer.Sign([]byte("nonsense"), "node-1", RoleWorker, testCluster, 0)
			return err
		},
		"certificate CSR": func() error { _, err := c.signer.Sign(c.certPEM, "node-1", RoleWorker, testCluster, 0); return err },
	} {
		if call() == nil {
			t.Errorf("%s: Sign succeeded", name)
		}
	}
}

func TestIdentityFromCert(t *testing.T) {
	c := newTestCA(t, testCluster)
	for _, role := range []string{RoleManager, RoleWorker} {
		certPEM, _ := c.issue(t, "node-7", role)
		id, err := IdentityFromCert(mustParseCert(t, certPEM))
		if err != nil {
			t.Fatal(err)
		}
		if want := (NodeIdentity{NodeID: "node-7", Role: role, ClusterID: testCluster}); id != want {
			t.Errorf("identity %+v, want %+v", id, want)
		}
	}

	// The CA certificate names no node.
	if _, err := IdentityFromCert(mustParseCert(t, c.certPEM)); err == nil {
		t.Error("IdentityFromCert accepted the CA certificate")
	}
	if _, err := IdentityFromCert(nil); err == nil {
		t.Error("IdentityFromCert accepted nil")
	}
	eightPEM, _ := c.issue(t, "node-8", RoleWorker)
	if id, err := IdentityFromPEM(eightPEM); err != nil || id.NodeID != "node-8" {
		t.Errorf("IdentityFromPEM = %+v, %v; want node-8", id, err)
	}
	if _, err := IdentityFromPEM([]byte("no PEM here")); err == nil {
		t.Error("IdentityFromPEM accepted no PEM block")
	}
	good, _ := c.issue(t, "node-7", RoleWorker)
	for name, mutate := range map[string]func(*x509.Certificate){
		"no CN":    func(c *x509.Certificate) { c.Subject.CommonName = "" },
		"no OU":    func(c *x509.Certificate) { c.Subject.OrganizationalUnit = nil },
		"two OUs":  func(c *x509.Certificate) { c.Subject.OrganizationalUnit = []string{RoleWorker, RoleManager} },
		"bad role": func(c *x509.Certificate) { c.Subject.OrganizationalUnit = []string{"admin"} },
		"no O":     func(c *x509.Certificate) { c.Subject.Organization = nil },
		"empty O":  func(c *x509.Certificate) { c.Subject.Organization = []string{""} },
		"two Os":   func(c *x509.Certificate) { c.Subject.Organization = []string{"a", "b"} },
	} {
		cert := mustParseCert(t, good)
		mutate(cert)
		if _, err := IdentityFromCert(cert); err == nil {
			t.Errorf("%s: IdentityFromCert succeeded", name)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a := newTestCA(t, testCluster)
	b := newTestCA(t, testCluster)
	fa, err := token.Fingerprint(a.certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := token.Fingerprint(a.certPEM); again != fa {
		t.Errorf("fingerprint not stable: %s then %s", fa, again)
	}
	// A token pins the CA by it.
	if tok, err := token.New(fa); err != nil || tok.CAFingerprint != fa {
		t.Errorf("token for fingerprint %q: %+v, %v", fa, tok, err)
	}
	if fb, _ := token.Fingerprint(b.certPEM); fb == fa {
		t.Error("two CAs share a fingerprint")
	}
	if _, err := token.Fingerprint([]byte("not PEM")); err == nil {
		t.Error("Fingerprint accepted garbage")
	}
	if _, err := token.Fingerprint(a.keyPEM); err == nil {
		t.Error("Fingerprint accepted a key")
	}
}
