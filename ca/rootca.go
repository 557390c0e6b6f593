package ca

import (
	"fmt"
	"time"

	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/initca"
)

// RootCAValidity is how long a new cluster CA certificate is valid.
const RootCAValidity = 10 * 365 * 24 * time.Hour

// NewRootCA makes the CA material for a new cluster: a self-signed Ed25519
// certificate with CN "jaco cluster CA <clusterID>", valid for
// RootCAValidity, that may sign only end-entity certificates (path length 0),
// and its PKCS #8 private key. Both are PEM-encoded. The key belongs in the
// raft state only.
func NewRootCA(clusterID string) (certPEM, keyPEM []byte, err error) {
	if clusterID == "" {
		return nil, nil, fmt.Errorf("new root CA: empty cluster id")
	}
	priv, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, fmt.Errorf("new root CA: %w", err)
	}
	req := &csr.CertificateRequest{
		CN: "jaco cluster CA " + clusterID,
		CA: &csr.CAConfig{
			Expiry:      RootCAValidity.String(),
			PathLenZero: true,
		},
	}
	certPEM, _, err = initca.NewFromSigner(req, priv)
	if err != nil {
		return nil, nil, fmt.Errorf("new root CA for cluster %s: %w", clusterID, err)
	}
	return certPEM, keyPEM, nil
}
