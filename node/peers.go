package node

import (
	"crypto/tls"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/internal/grpcflow"
)

// clientTLS returns the mutual-TLS config this node dials other nodes
// with, read from the node files once per identity (reloadTLS drops it):
// dials happen on the raft Ready loop's path.
func (n *Node) clientTLS() (*tls.Config, error) {
	if cfg := n.clientTLSCache.Load(); cfg != nil {
		return cfg, nil
	}
	caPEM, certPEM, keyPEM, err := n.keys.LoadNodeFiles()
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	cfg, err := ca.ClientTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	pair := cfg.Certificates[0]
	n.clientCert.Store(&pair)
	// Connections outlive certificates (renewal, role change): whenever a
	// connection (re)handshakes, it presents the certificate of now.
	cfg.Certificates = nil
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if p := n.clientCert.Load(); p != nil {
			return p, nil
		}
		if _, err := n.clientTLS(); err != nil {
			return nil, err
		}
		return n.clientCert.Load(), nil
	}
	// And it verifies the server against the CAs trusted now, which a CA
	// rotation changes under connections opened before (docs/adr/0041).
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		pool := n.trustPool.Load()
		if pool == nil {
			return errors.New("this node trusts no CA yet")
		}
		return token.VerifyServer(cs, pool, cs.ServerName)
	}
	n.clientTLSCache.Store(cfg)
	return cfg, nil
}

// dialPeer opens a lazy mTLS connection to another node.
func (n *Node) dialPeer(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	cfg, err := n.clientTLS()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, append(grpcflow.NodeDial(credentials.NewTLS(cfg)), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}
