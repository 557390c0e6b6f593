package ca

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
// tokenSecretBytes random bytes in lowercase base32 without padding (52
// characters). See docs/adr/0003-tokens.md.
const (
	tokenVersion     = "JACO1"
	tokenSecretBytes = 32
)

var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ErrMalformedToken is wrapped by ParseToken's and NewToken's errors.
var ErrMalformedToken = errors.New("malformed token")

// Token is a join or operator token. Secret is the canonical text of the
// secret; the cluster stores only Hash.
type Token struct {
	CAFingerprint string
	Secret        string
}

// NewToken makes a token with a fresh secret for the CA with fingerprint
// caFingerprint (as returned by Fingerprint).
func NewToken(caFingerprint string) (Token, error) {
	if err := checkFingerprint(caFingerprint); err != nil {
		return Token{}, fmt.Errorf("new token: %w", err)
	}
	secret := make([]byte, tokenSecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return Token{}, fmt.Errorf("new token: %w", err)
	}
	return Token{CAFingerprint: caFingerprint, Secret: secretEncoding.EncodeToString(secret)}, nil
}

// String is the token's text form, the one ParseToken reads.
func (t Token) String() string {
	return tokenVersion + "-" + t.CAFingerprint + "-" + t.Secret
}

// ParseToken reads a token's text form; surrounding white space is ignored.
// Its errors wrap ErrMalformedToken and never repeat the secret.
func ParseToken(s string) (Token, error) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	if len(parts) != 3 {
		return Token{}, fmt.Errorf("%w: want %s-<ca-fingerprint>-<secret>", ErrMalformedToken, tokenVersion)
	}
	if parts[0] != tokenVersion {
		return Token{}, fmt.Errorf("%w: unknown format %q, want %s", ErrMalformedToken, parts[0], tokenVersion)
	}
	t := Token{CAFingerprint: parts[1], Secret: parts[2]}
	if err := checkFingerprint(t.CAFingerprint); err != nil {
		return Token{}, err
	}
	raw, err := secretEncoding.DecodeString(t.Secret)
	if err != nil || len(raw) != tokenSecretBytes || secretEncoding.EncodeToString(raw) != t.Secret {
		return Token{}, fmt.Errorf("%w: secret is not %d bytes of lowercase unpadded base32", ErrMalformedToken, tokenSecretBytes)
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
		return fmt.Errorf("%w: CA fingerprint is not %d lowercase hex digits", ErrMalformedToken, 2*sha256.Size)
	}
	return nil
}
