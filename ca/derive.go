package ca

import (
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"github.com/google/uuid"

	"github.com/jaco-project/jaco/ca/token"
)

// Validity of a derived CA certificate. It must be the same on every node,
// so it cannot depend on the clock: a fixed start, twenty years on.
var (
	derivedCANotBefore = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	derivedCANotAfter  = derivedCANotBefore.AddDate(20, 0, 0)
)

// DerivedCluster is the identity of a statically formed cluster, computed
// alike on every node from the join secret and the initial configuration
// (docs/adr/0014-static-formation.md).
type DerivedCluster struct {
	ClusterID string
	CACertPEM []byte
	CAKeyPEM  []byte
	// OperatorToken is the cluster's first operator token.
	OperatorToken token.Token
}

// DeriveCluster derives a cluster id, a CA key and a byte-identical CA
// certificate, and an operator token, from secret and config (the
// canonical initial configuration: nodes given another configuration
// derive another cluster, whose certificates the first does not trust).
// Ed25519 signatures are deterministic, and every other field of the
// certificate is fixed or derived, so every node produces the same DER.
func DeriveCluster(secret *JoinSecret, config string) (*DerivedCluster, error) {
	purpose := func(what string) string { return "jaco static cluster v1 " + what + "\x00" + config }
	// A version 4 UUID in form, like the ids `cluster init` draws.
	var id uuid.UUID
	copy(id[:], secret.Derive(purpose("cluster id"), len(id)))
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	clusterID := id.String()

	priv := ed25519.NewKeyFromSeed(secret.Derive(purpose("ca key"), ed25519.SeedSize))
	serial := new(big.Int).SetBytes(secret.Derive(purpose("ca serial"), 16))
	serial.SetBit(serial, 127, 0) // positive, at most 16 bytes of DER
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "jaco cluster CA " + clusterID},
		NotBefore:             derivedCANotBefore,
		NotAfter:              derivedCANotAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	// Ed25519 signing reads no randomness; a reader that fails would say
	// so if that ever changed, rather than make the nodes disagree.
	der, err := x509.CreateCertificate(failingReader{}, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		return nil, fmt.Errorf("derive CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode derived CA key: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: pemTypeCertificate, Bytes: der})
	tok, err := token.FromSecret(token.FingerprintDER(der), secret.Derive(purpose("operator token"), token.SecretBytes))
	if err != nil {
		return nil, fmt.Errorf("derive operator token: %w", err)
	}
	return &DerivedCluster{
		ClusterID:     clusterID,
		CACertPEM:     certPEM,
		CAKeyPEM:      pem.EncodeToMemory(&pem.Block{Type: pemTypePrivateKey, Bytes: keyDER}),
		OperatorToken: tok,
	}, nil
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) {
	return 0, fmt.Errorf("derived CA certificate: randomness asked for; it would differ between nodes")
}
