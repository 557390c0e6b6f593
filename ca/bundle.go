package ca

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/jaco-project/jaco/ca/token"
)

// A CA bundle is the PEM certificates of the CAs a node trusts
// (ca.pem): one, or two during a CA rotation, the CA that signs now
// first (docs/adr/0041).

// ParseBundle parses every certificate of bundlePEM, in order. It fails
// on a bundle without a certificate or with a block that is not one.
func ParseBundle(bundlePEM []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := bundlePEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != pemTypeCertificate {
			return nil, fmt.Errorf("CA bundle: a %q block where a certificate belongs", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w", err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("CA bundle: no PEM CERTIFICATE block found")
	}
	return certs, nil
}

// Bundle joins PEM CA certificates into a bundle, in the order given.
func Bundle(certPEMs ...[]byte) []byte {
	var b bytes.Buffer
	for _, c := range certPEMs {
		b.Write(bytes.TrimSpace(c))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BundleFingerprint is the lowercase hex SHA-256 of the bundle's
// certificates' DER, concatenated in order: two nodes trust the same CAs
// in the same order exactly when their bundles' fingerprints are equal.
func BundleFingerprint(bundlePEM []byte) (string, error) {
	certs, err := ParseBundle(bundlePEM)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, c := range certs {
		h.Write(c.Raw)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TrustPool is a pool of the bundle's CAs.
func TrustPool(bundlePEM []byte) (*x509.CertPool, error) {
	certs, err := ParseBundle(bundlePEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// IssuerFingerprint is the fingerprint (token.Fingerprint) of the CA of
// bundlePEM that issued the node certificate certPEM, "" when none of
// them did. Expiry is not checked: the question is whose certificate it
// is, not whether it still serves.
func IssuerFingerprint(certPEM, bundlePEM []byte) (string, error) {
	leaf, err := parseCertPEM(certPEM)
	if err != nil {
		return "", fmt.Errorf("node certificate: %w", err)
	}
	cas, err := ParseBundle(bundlePEM)
	if err != nil {
		return "", err
	}
	for _, c := range cas {
		if leaf.CheckSignatureFrom(c) == nil {
			return token.FingerprintDER(c.Raw), nil
		}
	}
	return "", nil
}

// CheckCA makes sure certPEM and keyPEM can serve as a cluster CA, as an
// operator brings them to a CA rotation: a CA certificate that may sign
// certificates, valid now and for a while yet, and the private key that
// belongs to it. The error says which of these fails.
func CheckCA(certPEM, keyPEM []byte, now time.Time) error {
	certs, err := ParseBundle(certPEM)
	if err != nil {
		return err
	}
	if len(certs) != 1 {
		return fmt.Errorf("CA certificate file holds %d certificates, want exactly 1", len(certs))
	}
	c := certs[0]
	if !c.BasicConstraintsValid || !c.IsCA {
		return errors.New("the certificate is not a CA certificate (basic constraints CA:TRUE)")
	}
	if c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0 {
		return errors.New("the CA certificate's key usage does not allow signing certificates")
	}
	if now.Before(c.NotBefore) || !now.Add(minCAValidityLeft).Before(c.NotAfter) {
		return fmt.Errorf("the CA certificate is valid from %s to %s: it must be valid now and for %s more",
			c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339), minCAValidityLeft)
	}
	if _, err := NewSigner(certPEM, keyPEM); err != nil {
		return err
	}
	return nil
}

// minCAValidityLeft is the least validity a CA brought to a rotation must
// have left: node certificates never outlive their CA, so a CA about to
// expire would have nodes renewing all the time.
const minCAValidityLeft = 7 * 24 * time.Hour
