package ca

import (
	"crypto"
	"errors"
	"fmt"
	"time"

	"github.com/cloudflare/cfssl/config"
	"github.com/cloudflare/cfssl/csr"
	cfsigner "github.com/cloudflare/cfssl/signer"
	"github.com/cloudflare/cfssl/signer/local"
)

// DefaultCertTTL is the validity of a node certificate when Sign is given 0.
const DefaultCertTTL = 90 * 24 * time.Hour

// Signer issues node certificates with the cluster CA. It is safe for
// concurrent use.
type Signer struct {
	caCertNotAfter time.Time
	signer         *local.Signer
}

// NewSigner makes a Signer from the PEM CA certificate and key (as made by
// NewRootCA). It fails when the key does not belong to the certificate.
func NewSigner(caCertPEM, caKeyPEM []byte) (*Signer, error) {
	caCert, err := parseCertPEM(caCertPEM)
	if err != nil {
		return nil, fmt.Errorf("CA signer: CA certificate: %w", err)
	}
	if !caCert.IsCA {
		return nil, errors.New("CA signer: certificate is not a CA certificate")
	}
	priv, err := parseKeyPEM(caKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA signer: CA key: %w", err)
	}
	pub, ok := priv.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(caCert.PublicKey) {
		return nil, errors.New("CA signer: CA key does not match the CA certificate")
	}
	s, err := local.NewSigner(priv, caCert, cfsigner.DefaultSigAlgo(priv), nodePolicy())
	if err != nil {
		return nil, fmt.Errorf("CA signer: %w", err)
	}
	return &Signer{caCertNotAfter: caCert.NotAfter, signer: s}, nil
}

// nodePolicy is the signing policy for node certificates: Ed25519-friendly
// key usage, both TLS roles, and nothing but the public key taken from the
// CSR (no subject, no SANs, no extensions, no CA bit).
func nodePolicy() *config.Signing {
	return &config.Signing{
		Default: &config.SigningProfile{
			Usage:  []string{"digital signature", "server auth", "client auth"},
			Expiry: DefaultCertTTL,
			CSRWhitelist: &config.CSRWhitelist{
				PublicKey:          true,
				PublicKeyAlgorithm: true,
				SignatureAlgorithm: true,
			},
		},
	}
}

// Issue makes a fresh key for nodeID and signs its certificate (see
// Sign): for a node whose certificate is made where the CA is at hand
// (cluster init, static formation, restore) rather than from a CSR sent
// by the node.
func (s *Signer) Issue(nodeID, role, clusterID string, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	keyPEM, csrPEM, err := NewNodeKey(nodeID)
	if err != nil {
		return nil, nil, err
	}
	certPEM, err = s.Sign(csrPEM, nodeID, role, clusterID, ttl)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// Sign issues a certificate for the key in csrPEM. Whatever the CSR asked
// for, the subject is CN = nodeID, OU = role ("manager" or "worker"),
// O = clusterID, and the SANs are nodeID plus extraSANs (DNS names or IP
// addresses, e.g. the address the node advertises). The certificate is good
// for client and server TLS for ttl (DefaultCertTTL when 0), backdated five
// minutes for clock skew, and never outlives the CA certificate.
func (s *Signer) Sign(csrPEM []byte, nodeID, role, clusterID string, ttl time.Duration, extraSANs ...string) (certPEM []byte, err error) {
	if err := validateNodeID(nodeID); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if err := validateRole(role); err != nil {
		return nil, fmt.Errorf("sign node %s: %w", nodeID, err)
	}
	if clusterID == "" {
		return nil, fmt.Errorf("sign node %s: empty cluster id", nodeID)
	}
	if ttl < 0 {
		return nil, fmt.Errorf("sign node %s: negative ttl %s", nodeID, ttl)
	}
	if ttl == 0 {
		ttl = DefaultCertTTL
	}
	// The validity window is set here, not left to cfssl: its default
	// backdate starts from the issue time rounded to the minute, which
	// moves the start by up to 30 s and so RenewAt's idea of when the
	// certificate was issued (a 30 s certificate issued at second 40
	// would look due only at its expiry).
	now := time.Now()
	notBefore := now.Add(-CertBackdate)
	notAfter := now.Add(ttl)
	if notAfter.After(s.caCertNotAfter) {
		notAfter = s.caCertNotAfter
	}
	req := cfsigner.SignRequest{
		Request: string(csrPEM),
		Hosts:   append([]string{nodeID}, extraSANs...),
		Subject: &cfsigner.Subject{
			CN:    nodeID,
			Names: []csr.Name{{O: clusterID, OU: role}},
		},
		NotBefore: notBefore,
		NotAfter:  notAfter,
	}
	certPEM, err = s.signer.Sign(req)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for node %s: %w", nodeID, err)
	}
	return certPEM, nil
}
