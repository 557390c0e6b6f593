package ca

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/jaco-project/jaco/ca/token"
)

// ServerTLSConfig is the config of a node's listener; caPEM is the CA
// bundle (bundle.go). It presents the node certificate followed by the CA
// certificates (so a client that knows only
// the CA fingerprint can verify it, see token.PinnedTLSConfig). It requests a
// client certificate but does not require one, since operators come with a
// token instead; a client certificate that is given must verify against the
// CA. The caller reads the client's identity with IdentityFromCert from
// tls.ConnectionState.VerifiedChains.
func ServerTLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pool, caDERs, err := caPool(caPEM)
	if err != nil {
		return nil, fmt.Errorf("server TLS config: %w", err)
	}
	pair, err := nodeKeyPair(certPEM, keyPEM, caDERs)
	if err != nil {
		return nil, fmt.Errorf("server TLS config: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
	}, nil
}

// ClientTLSConfig is the config for node-to-node mutual TLS. It presents the
// node certificate and accepts a server whose certificate chains to the CA.
// With ServerName empty (or an IP address, which TLS does not send as a
// server name) any node of the cluster is accepted; to insist on one node,
// set ServerName on a clone to its node id (or another SAN it was signed
// with). Note that gRPC fills an empty ServerName with the host of the dial
// target, so a target given by host name must be one of the server's SANs.
func ClientTLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pool, caDERs, err := caPool(caPEM)
	if err != nil {
		return nil, fmt.Errorf("client TLS config: %w", err)
	}
	pair, err := nodeKeyPair(certPEM, keyPEM, caDERs)
	if err != nil {
		return nil, fmt.Errorf("client TLS config: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		// The server's name is not known when dialling an address: the
		// chain is verified in VerifyConnection instead, against the CA
		// pool and, when one was asked for, the expected name.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return token.VerifyServer(cs, pool, cs.ServerName)
		},
	}, nil
}

// caPool parses the CA bundle into a pool and returns its DER too.
func caPool(caPEM []byte) (*x509.CertPool, [][]byte, error) {
	certs, err := ParseBundle(caPEM)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	ders := make([][]byte, len(certs))
	for i, c := range certs {
		pool.AddCert(c)
		ders[i] = c.Raw
	}
	return pool, ders, nil
}

// nodeKeyPair loads the node's certificate and key and appends the CA
// certificates to the chain it presents: a client that pins any CA of the
// bundle finds it there (during a CA rotation, docs/adr/0041).
func nodeKeyPair(certPEM, keyPEM []byte, caDERs [][]byte) (tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("node certificate and key: %w", err)
	}
	pair.Certificate = append(pair.Certificate, caDERs...)
	return pair, nil
}
