package ca

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jaco-project/jaco/ca/token"
)

const testSecret = "0123456789abcdef0123456789abcdef"

// tlsPair returns the two ends' states of one TLS 1.3 connection made over
// an in-memory pipe: the server presents a throwaway certificate the
// client does not verify, as in a formation join.
func tlsPair(t *testing.T) (client, server tls.ConnectionState) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, s := net.Pipe()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	ts := tls.Server(s, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}}, MinVersion: tls.VersionTLS13})
	t.Cleanup(func() { tc.Close(); ts.Close() })
	errc := make(chan error, 1)
	go func() { errc <- ts.Handshake() }()
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return tc.ConnectionState(), ts.ConnectionState()
}

func mustSecret(t *testing.T, s string) *JoinSecret {
	t.Helper()
	js, err := NewJoinSecret([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestJoinSecretProofsBothWays(t *testing.T) {
	cs, ss := tlsPair(t)
	joiner, server := mustSecret(t, testSecret+"\n"), mustSecret(t, testSecret)
	proof, err := joiner.ClientProof(cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.VerifyClient(ss, proof); err != nil {
		t.Fatalf("server refused the joiner's proof: %v", err)
	}
	answer, err := server.ServerProof(ss)
	if err != nil {
		t.Fatal(err)
	}
	if err := joiner.VerifyServer(cs, answer); err != nil {
		t.Fatalf("joiner refused the server's proof: %v", err)
	}
	// A server cannot answer with the client's own proof.
	if err := joiner.VerifyServer(cs, proof); !errors.Is(err, ErrJoinSecret) {
		t.Fatalf("client proof echoed back accepted as the server's: %v", err)
	}
}

func TestJoinSecretRefusals(t *testing.T) {
	cs, ss := tlsPair(t)
	server := mustSecret(t, testSecret)
	wrong := mustSecret(t, "fedcba9876543210fedcba9876543210")
	proof, err := wrong.ClientProof(cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.VerifyClient(ss, proof); !errors.Is(err, ErrJoinSecret) {
		t.Fatalf("wrong secret: %v, want ErrJoinSecret", err)
	}
	// A proof made on another connection (a relay's) does not verify.
	other, _ := tlsPair(t)
	right := mustSecret(t, testSecret)
	relayed, err := right.ClientProof(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.VerifyClient(ss, relayed); !errors.Is(err, ErrJoinSecret) {
		t.Fatalf("proof of another connection: %v, want ErrJoinSecret", err)
	}
	if err := server.VerifyClient(ss, nil); !errors.Is(err, ErrJoinSecret) {
		t.Fatalf("no proof: %v, want ErrJoinSecret", err)
	}
}

func TestJoinSecretTooShortOrOpen(t *testing.T) {
	if _, err := NewJoinSecret([]byte("  short  \n")); !errors.Is(err, ErrJoinSecret) {
		t.Fatalf("short secret: %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte(testSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJoinSecret(p); !errors.Is(err, ErrJoinSecret) {
		t.Fatalf("world-readable secret file: %v", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJoinSecret(p); err != nil {
		t.Fatal(err)
	}
}

func TestDeriveClusterDeterministic(t *testing.T) {
	const cfg = "a=198.18.0.1:7000,b=198.18.0.2:7000"
	one, err := DeriveCluster(mustSecret(t, testSecret), cfg)
	if err != nil {
		t.Fatal(err)
	}
	two, err := DeriveCluster(mustSecret(t, testSecret+"\n"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if one.ClusterID != two.ClusterID || !bytes.Equal(one.CACertPEM, two.CACertPEM) ||
		!bytes.Equal(one.CAKeyPEM, two.CAKeyPEM) || one.OperatorToken != two.OperatorToken {
		t.Fatal("two derivations from the same secret and configuration differ")
	}
	if _, err := token.Parse(one.OperatorToken.String()); err != nil {
		t.Fatalf("derived operator token: %v", err)
	}
	fp, _ := token.Fingerprint(one.CACertPEM)
	if fp != one.OperatorToken.CAFingerprint {
		t.Fatal("operator token does not name the derived CA")
	}
	// The derived CA signs node certificates like a drawn one.
	s, err := NewSigner(one.CACertPEM, one.CAKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, csr, err := NewNodeKey("node1")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := s.Sign(csr, "node1", RoleManager, one.ClusterID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ServerTLSConfig(one.CACertPEM, cert, key); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, secret, cfg string
	}{
		{"other secret", "fedcba9876543210fedcba9876543210", cfg},
		{"other configuration", testSecret, cfg + ",c=198.18.0.3:7000"},
	} {
		d, err := DeriveCluster(mustSecret(t, c.secret), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.ClusterID == one.ClusterID || bytes.Equal(d.CACertPEM, one.CACertPEM) || bytes.Equal(d.CAKeyPEM, one.CAKeyPEM) {
			t.Errorf("%s derived the same cluster", c.name)
		}
	}
}
