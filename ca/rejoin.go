package ca

import (
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
)

// A node whose certificate expired cannot present it in TLS (the server
// refuses it), so a rejoin proves it is that node another way: the
// expired certificate's key signs the request for the new one
// (docs/adr/0039-rejoin-expired-certificate.md). The signature is over a
// fixed context and the request's PEM, so it says nothing about any other
// message and can admit no key but the one the request names.

// rejoinContext is prefixed to what a rejoin proof signs.
const rejoinContext = "jaco rejoin proof v1\x00"

// ErrRejoinProof: the certificate does not chain to the cluster CA, or the
// proof is not its key's signature of the request.
var ErrRejoinProof = errors.New("rejoin proof does not verify")

// RejoinProof signs csrPEM with the node's old private key (keyPEM).
func RejoinProof(keyPEM, csrPEM []byte) ([]byte, error) {
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("rejoin proof: %w", err)
	}
	sig, err := key.Sign(nil, rejoinMessage(csrPEM), crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("rejoin proof: sign: %w", err)
	}
	return sig, nil
}

// VerifyRejoin checks that certPEM is a node certificate the CA of caPEM
// issued — at a moment of its validity, so an expired one passes — and
// that proof is the signature of its key over csrPEM, and returns the
// identity it names. Every refusal wraps ErrRejoinProof.
func VerifyRejoin(caPEM, certPEM, csrPEM, proof []byte) (NodeIdentity, error) {
	pool, _, err := caPool(caPEM)
	if err != nil {
		return NodeIdentity{}, err
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return NodeIdentity{}, fmt.Errorf("%w: %v", ErrRejoinProof, err)
	}
	// The one check left out is the expiry: the certificate is verified
	// as of its last valid moment.
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: cert.NotAfter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return NodeIdentity{}, fmt.Errorf("%w: the certificate is not the cluster CA's: %v", ErrRejoinProof, err)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return NodeIdentity{}, fmt.Errorf("%w: the certificate's key is %T, not Ed25519", ErrRejoinProof, cert.PublicKey)
	}
	if !ed25519.Verify(pub, rejoinMessage(csrPEM), proof) {
		return NodeIdentity{}, fmt.Errorf("%w: the proof is not the signature of the certificate's key", ErrRejoinProof)
	}
	id, err := IdentityFromCert(cert)
	if err != nil {
		return NodeIdentity{}, fmt.Errorf("%w: %v", ErrRejoinProof, err)
	}
	return id, nil
}

func rejoinMessage(csrPEM []byte) []byte {
	return append([]byte(rejoinContext), csrPEM...)
}
