package ca

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
)

// MinJoinSecretLen is the shortest join secret accepted, in bytes. The
// proofs below are HMACs an impostor may collect, so the secret must be too
// long to guess offline: 32 characters of base64 carry 192 bits.
const MinJoinSecretLen = 32

// exporterLabel names the TLS keying material the proofs bind to (RFC 8446
// §7.5); both ends of one TLS connection export the same value, two
// connections (a man in the middle's) never do.
const exporterLabel = "EXPERIMENTAL-jaco-join-secret-v1"

// Proof labels keep the two directions apart, so a server cannot answer a
// client with the client's own proof.
const (
	clientProofLabel = "jaco join client v1"
	serverProofLabel = "jaco join server v1"
)

// ErrJoinSecret is wrapped by every refusal of a join secret or its proof.
var ErrJoinSecret = errors.New("join secret")

// JoinSecret authenticates formation joins (ordinal and static formation,
// docs/adr/0013-ordinal-formation.md) instead of a single-use token: both
// ends hold the same secret and each proves it to the other over the TLS
// connection they share, without sending the secret. Neither end needs a
// certificate the other trusts; the proofs are what it trusts.
type JoinSecret struct {
	raw    []byte
	macKey []byte
}

// NewJoinSecret checks a secret's length and derives its proof key. Leading
// and trailing white space is not part of it (files end in a newline).
func NewJoinSecret(secret []byte) (*JoinSecret, error) {
	raw := bytes.TrimSpace(secret)
	if len(raw) < MinJoinSecretLen {
		return nil, fmt.Errorf("%w: %d bytes, want at least %d (e.g. `head -c 32 /dev/urandom | base64`)", ErrJoinSecret, len(raw), MinJoinSecretLen)
	}
	s := &JoinSecret{raw: bytes.Clone(raw)}
	s.macKey = s.Derive("jaco join secret v1 proof key", sha256.Size)
	return s, nil
}

// ReadJoinSecret reads a secret from a file that only its owner may read.
func ReadJoinSecret(path string) (*JoinSecret, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJoinSecret, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is readable by others (mode %v); chmod 600 it", ErrJoinSecret, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJoinSecret, err)
	}
	return NewJoinSecret(b)
}

// Derive returns n bytes derived from the secret for purpose (HKDF-SHA256).
// Different purposes give independent keys.
func (s *JoinSecret) Derive(purpose string, n int) []byte {
	b, err := hkdf.Key(sha256.New, s.raw, nil, purpose, n)
	if err != nil {
		panic(fmt.Sprintf("hkdf of %d bytes: %v", n, err)) // only for n > 255*32
	}
	return b
}

// ClientProof is what a joiner sends over the connection cs describes.
func (s *JoinSecret) ClientProof(cs tls.ConnectionState) ([]byte, error) {
	return s.proof(cs, clientProofLabel)
}

// ServerProof is what a server answers with once the client's proof held.
func (s *JoinSecret) ServerProof(cs tls.ConnectionState) ([]byte, error) {
	return s.proof(cs, serverProofLabel)
}

// VerifyClient checks a joiner's proof in constant time.
func (s *JoinSecret) VerifyClient(cs tls.ConnectionState, proof []byte) error {
	return s.verify(cs, clientProofLabel, proof)
}

// VerifyServer checks a server's proof in constant time.
func (s *JoinSecret) VerifyServer(cs tls.ConnectionState, proof []byte) error {
	return s.verify(cs, serverProofLabel, proof)
}

func (s *JoinSecret) verify(cs tls.ConnectionState, label string, proof []byte) error {
	want, err := s.proof(cs, label)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, proof) {
		return fmt.Errorf("%w: the peer's proof does not verify: it does not hold the same join secret", ErrJoinSecret)
	}
	return nil
}

func (s *JoinSecret) proof(cs tls.ConnectionState, label string) ([]byte, error) {
	if cs.Version < tls.VersionTLS13 {
		return nil, fmt.Errorf("%w: connection is not TLS 1.3", ErrJoinSecret)
	}
	ekm, err := cs.ExportKeyingMaterial(exporterLabel, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: export keying material: %w", ErrJoinSecret, err)
	}
	mac := hmac.New(sha256.New, s.macKey)
	mac.Write([]byte(label))
	mac.Write(ekm)
	return mac.Sum(nil), nil
}
