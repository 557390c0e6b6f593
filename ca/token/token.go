// Package token is what a party without a node certificate holds to reach
// a cluster: the join and operator tokens, which carry the cluster CA's
// fingerprint and a secret, and the TLS configuration that trusts a server
// only through that fingerprint. It is apart from package ca so that a
// client (the CLI) links neither the signing library nor the rest of the
// CA. See docs/adr/0003-tokens.md.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

// Token text is "JACO1-<ca-fingerprint>-<secret>": the format version, the
// CA certificate's Fingerprint (64 lowercase hex digits) and a secret of
// SecretBytes random bytes in lowercase base32 without padding (52
// characters).
const version = "JACO1"

// SecretBytes is the length of a token's secret before encoding.
const SecretBytes = 32

var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ErrMalformed is wrapped by the errors of Parse, New and FromSecret.
var ErrMalformed = errors.New("malformed token")

// Token is a join or operator token. Secret is the canonical text of the
// secret; the cluster stores only Hash.
type Token struct {
	CAFingerprint string
	Secret        string
}

// New makes a token with a fresh secret for the CA with fingerprint
// caFingerprint (as returned by Fingerprint).
func New(caFingerprint string) (Token, error) {
	secret := make([]byte, SecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return Token{}, fmt.Errorf("new token: %w", err)
	}
	return FromSecret(caFingerprint, secret)
}

// FromSecret makes the token with the given SecretBytes of secret, for a
// secret that is derived rather than drawn (a statically formed cluster's
// operator token is the same on every node).
func FromSecret(caFingerprint string, secret []byte) (Token, error) {
	if err := checkFingerprint(caFingerprint); err != nil {
		return Token{}, fmt.Errorf("new token: %w", err)
	}
	if len(secret) != SecretBytes {
		return Token{}, fmt.Errorf("new token: %w: secret is %d bytes, want %d", ErrMalformed, len(secret), SecretBytes)
	}
	return Token{CAFingerprint: caFingerprint, Secret: secretEncoding.EncodeToString(secret)}, nil
}

// String is the token's text form, the one Parse reads.
func (t Token) String() string {
	return version + "-" + t.CAFingerprint + "-" + t.Secret
}

// Parse reads a token's text form; surrounding white space is ignored.
// Its errors wrap ErrMalformed and never repeat the secret.
func Parse(s string) (Token, error) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	if len(parts) != 3 {
		return Token{}, fmt.Errorf("%w: want %s-<ca-fingerprint>-<secret>", ErrMalformed, version)
	}
	if parts[0] != version {
		return Token{}, fmt.Errorf("%w: unknown format %q, want %s", ErrMalformed, parts[0], version)
	}
	t := Token{CAFingerprint: parts[1], Secret: parts[2]}
	if err := checkFingerprint(t.CAFingerprint); err != nil {
		return Token{}, err
	}
	raw, err := secretEncoding.DecodeString(t.Secret)
	if err != nil || len(raw) != SecretBytes || secretEncoding.EncodeToString(raw) != t.Secret {
		return Token{}, fmt.Errorf("%w: secret is not %d bytes of lowercase unpadded base32", ErrMalformed, SecretBytes)
	}
	return t, nil
}

// Hash is the SHA-256 of the secret's text: what the cluster stores.
func (t Token) Hash() []byte {
	sum := sha256.Sum256([]byte(t.Secret))
	return sum[:]
}

// HashMatches reports, in constant time, whether hash is t's Hash.
func HashMatches(hash []byte, t Token) bool {
	return subtle.ConstantTimeCompare(hash, t.Hash()) == 1
}

// checkFingerprint accepts only what Fingerprint returns: 64 lowercase hex
// digits.
func checkFingerprint(fp string) error {
	if len(fp) != 2*sha256.Size || strings.IndexFunc(fp, func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'f')
	}) >= 0 {
		return fmt.Errorf("%w: CA fingerprint is not %d lowercase hex digits", ErrMalformed, 2*sha256.Size)
	}
	return nil
}
