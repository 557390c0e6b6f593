package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca/token"
)

// testCA is a CA that signs a server certificate, as a cluster's does.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert, key}
}

// serverCert is a server certificate ca signs.
func (ca testCA) serverCert(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	cert.PublicKey = key // carried to the tls.Certificate below
	return cert
}

// serveTLS serves an empty gRPC server on loopback presenting leaf and
// chain, and returns its address.
func serveTLS(t *testing.T, leaf *x509.Certificate, chain ...*x509.Certificate) string {
	t.Helper()
	tc := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: leaf.PublicKey, Leaf: leaf}
	for _, c := range chain {
		tc.Certificate = append(tc.Certificate, c.Raw)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{tc}, MinVersion: tls.VersionTLS13})))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// A server whose CA is not the one the token pins is refused ca_mismatch,
// on unary calls and streams alike, not unavailable; the server of the
// pinned CA is reached (it answers Unimplemented: it serves nothing).
func TestCAMismatch(t *testing.T) {
	mine, other := newTestCA(t, "mine"), newTestCA(t, "other")
	otherLeaf := other.serverCert(t)
	for _, c := range []struct {
		name  string
		addr  string
		pin   *x509.Certificate
		match bool
	}{
		{"another cluster", serveTLS(t, otherLeaf, other.cert), mine.cert, false},
		{"the pinned CA's certificate beside a leaf another CA signed", serveTLS(t, otherLeaf, mine.cert), mine.cert, false},
		{"no CA in the chain", serveTLS(t, otherLeaf), mine.cert, false},
		{"the pinned CA", serveTLS(t, mine.serverCert(t), mine.cert), mine.cert, true},
	} {
		tok, err := token.New(token.FingerprintDER(c.pin.Raw))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := New(WithServer(c.addr, tok.String()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, unaryErr := cl.Control.ListServices(ctx, &api.ListServicesRequest{})
		var streamErr error
		if s, err := cl.Control.WatchService(ctx, &api.WatchServiceRequest{}); err != nil {
			streamErr = err
		} else {
			_, streamErr = s.Recv()
		}
		cancel()
		_ = cl.Close()
		for call, err := range map[string]error{"unary": unaryErr, "stream": streamErr} {
			switch {
			case c.match && status.Code(err) != codes.Unimplemented:
				t.Errorf("%s: %s call: %v, want Unimplemented (the handshake passes)", c.name, call, err)
			case !c.match && reason.Of(err) != reason.CAMismatch:
				t.Errorf("%s: %s call: %v (reason %q), want %s", c.name, call, err, reason.Of(err), reason.CAMismatch)
			}
		}
	}
}
