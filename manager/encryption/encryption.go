// Package encryption seals raft data at rest.
//
// Every WAL entry's data and every snapshot payload pass through a Sealer
// keyed by the data-encryption key (DEK), a random 256-bit key. The cipher
// is XChaCha20-Poly1305: its 192-bit random nonces cannot repeat in
// practice however many records one key seals, which AES-GCM's 96-bit
// nonces cannot promise for a long-lived log. Callers bind each record to
// its place (index and term) through the associated data, so a record moved
// to another position fails to open.
//
// The DEK sits in a 0600 file under the node directory (keyfile.go): in
// clear while autolock is off, sealed with the key-encryption key (the
// cluster's unlock key, unlockkey.go) while it is on.
package encryption

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// KeySize is the size of a data-encryption key.
const KeySize = chacha20poly1305.KeySize

// formatXChaCha is the first byte of every sealed record; a later format
// (another cipher, a key id) gets its own byte.
const formatXChaCha = 1

// ErrOpen is returned for a sealed record that does not open: wrong key,
// wrong position, or altered bytes.
var ErrOpen = errors.New("sealed record does not open")

// Key is a data-encryption key.
type Key [KeySize]byte

// NewKey returns a fresh random key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return Key{}, fmt.Errorf("read random key: %w", err)
	}
	return k, nil
}

// Sealer seals records with its current key and opens records sealed with
// the current key or an older one (a data key being rotated out). It is
// safe for concurrent use.
type Sealer struct {
	aeads []cipher.AEAD // the current key's first, then the older ones
}

// NewSealer returns a Sealer that seals with current and also opens what
// older keys sealed.
func NewSealer(current Key, older ...Key) (*Sealer, error) {
	s := &Sealer{}
	for _, k := range append([]Key{current}, older...) {
		aead, err := chacha20poly1305.NewX(k[:])
		if err != nil {
			return nil, fmt.Errorf("new xchacha20-poly1305: %w", err)
		}
		s.aeads = append(s.aeads, aead)
	}
	return s, nil
}

// Seal encrypts plaintext bound to ad: format byte, nonce, ciphertext.
func (s *Sealer) Seal(plaintext, ad []byte) []byte {
	aead := s.aeads[0]
	ns := aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plaintext)+aead.Overhead())
	out[0] = formatXChaCha
	// crypto/rand.Read never fails on Linux (it panics rather than return
	// short), so an unchecked read cannot leave a zero nonce.
	_, _ = rand.Read(out[1 : 1+ns])
	return aead.Seal(out, out[1:1+ns], plaintext, ad)
}

// Open reverses Seal for the same ad.
func (s *Sealer) Open(sealed, ad []byte) ([]byte, error) {
	ns, overhead := s.aeads[0].NonceSize(), s.aeads[0].Overhead()
	if len(sealed) < 1+ns+overhead {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrOpen, len(sealed))
	}
	if sealed[0] != formatXChaCha {
		return nil, fmt.Errorf("%w: unknown format %d", ErrOpen, sealed[0])
	}
	for _, aead := range s.aeads {
		if plain, err := aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], ad); err == nil {
			return plain, nil
		}
	}
	return nil, ErrOpen
}
