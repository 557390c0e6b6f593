package token

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// Fingerprint is the lowercase hex SHA-256 of the CA certificate's DER:
// what a token pins.
func Fingerprint(caCertPEM []byte) (string, error) {
	block, _ := pem.Decode(caCertPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("fingerprint: no PEM CERTIFICATE block found")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("fingerprint: parse certificate: %w", err)
	}
	return FingerprintDER(cert.Raw), nil
}

// FingerprintDER is the Fingerprint of a CA certificate already in DER
// form (one just created).
func FingerprintDER(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// ErrCAMismatch is a server whose certificate is not issued by the CA a
// token pins: another cluster, or a man in the middle. Clients tell it
// apart from a server they cannot reach (reason ca_mismatch,
// docs/design.md §11).
var ErrCAMismatch = errors.New("the server's CA is not the one the token names")

// PinnedTLSConfig is the config of a client that has no CA certificate yet
// but knows the CA's fingerprint from a token (the operator CLI, a joining
// node). It accepts a server only if the chain it presents contains a CA
// certificate whose Fingerprint is fp and the server's certificate verifies
// against that CA. Any node of that cluster is accepted: the client knows
// the cluster, not which node answers at the address it dialled. It presents
// no client certificate.
func PinnedTLSConfig(fp string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Verified in VerifyConnection against the pinned CA.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyPinned(cs, fp)
		},
	}
}

func verifyPinned(cs tls.ConnectionState, fp string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server presented no certificate")
	}
	for _, c := range cs.PeerCertificates[1:] {
		if FingerprintDER(c.Raw) == fp {
			roots := x509.NewCertPool()
			roots.AddCert(c)
			// No name: the pin names the cluster, any of its nodes may answer.
			err := VerifyServer(cs, roots, "")
			// A chain that carries the pinned CA's certificate beside a
			// leaf another CA signed is a mismatch too; an expired leaf of
			// the right CA is not.
			if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
				return fmt.Errorf("%w: %w", ErrCAMismatch, err)
			}
			return err
		}
	}
	return fmt.Errorf("%w: the server's chain holds no CA certificate with fingerprint %s", ErrCAMismatch, fp)
}

// VerifyServer verifies the chain the server presented against roots, for
// server auth and, unless name is empty, for name. It is the one check
// behind a pinned client and a node's own (ca.ClientTLSConfig).
func VerifyServer(cs tls.ConnectionState, roots *x509.CertPool, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server presented no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		DNSName:       name,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("verify server certificate %q: %w", leaf.Subject.CommonName, err)
	}
	return nil
}
