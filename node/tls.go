package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	"github.com/jaco-project/jaco/ca"
)

// serverTLS returns the TLS config of the TCP listener for this node's
// current identity. Before init the node has no certificate, so it
// presents a throwaway self-signed one: only Cluster.Status and Join are
// served then, and no client can (or needs to) pin it.
func (n *Node) serverTLS() (*tls.Config, error) {
	caPEM, certPEM, keyPEM, err := n.keys.LoadNodeFiles()
	if err != nil || !n.initialized() {
		return ephemeralTLS()
	}
	cfg, err := ca.ServerTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	id, err := ca.IdentityFromPEM(certPEM)
	if err != nil {
		return nil, err
	}
	n.clusterID.Store(id.ClusterID)
	cfg.NextProtos = []string{"h2"}
	return cfg, nil
}

func ephemeralTLS() (*tls.Config, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ephemeral key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "jaco uninitialized node"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, fmt.Errorf("self-sign ephemeral certificate: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}},
		NextProtos:   []string{"h2"},
	}, nil
}
