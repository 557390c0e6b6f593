package ca

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/cloudflare/cfssl/csr"
)

const (
	pemTypeCertificate = "CERTIFICATE"
	pemTypePrivateKey  = "PRIVATE KEY"
)

// NewNodeKey makes a fresh Ed25519 key and a CSR for it with subject
// CN=nodeID. The key is PEM-encoded PKCS #8 ("PRIVATE KEY"). The CSR's subject
// is only a hint: the Signer sets the certificate's identity itself.
func NewNodeKey(nodeID string) (keyPEM, csrPEM []byte, err error) {
	if err := validateNodeID(nodeID); err != nil {
		return nil, nil, err
	}
	priv, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	csrPEM, err = csr.Generate(priv, &csr.CertificateRequest{CN: nodeID})
	if err != nil {
		return nil, nil, fmt.Errorf("generate CSR for node %s: %w", nodeID, err)
	}
	return keyPEM, csrPEM, nil
}

// newKey generates an Ed25519 key and its PKCS #8 PEM encoding. (cfssl's own
// key generation writes a non-standard "Ed25519 PRIVATE KEY" PEM type that
// tools such as openssl do not read.)
func newKey() (ed25519.PrivateKey, []byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate Ed25519 key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("encode Ed25519 key: %w", err)
	}
	return priv, pem.EncodeToMemory(&pem.Block{Type: pemTypePrivateKey, Bytes: der}), nil
}

// parseCertPEM parses the first PEM block of certPEM, which must be a
// certificate.
func parseCertPEM(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != pemTypeCertificate {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// parseKeyPEM parses a PKCS #8 private key. cfssl's "Ed25519 PRIVATE KEY"
// blocks hold the same PKCS #8 structure and are accepted too.
func parseKeyPEM(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM private key block found")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return signer, nil
}
