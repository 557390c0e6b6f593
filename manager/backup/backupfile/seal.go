package backupfile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/jaco-project/jaco/manager/encryption"
)

// fileMagic opens a sealed backup file; the last byte is the file format
// version.
var fileMagic = []byte("JACOBAK\x01")

// keyIDSize is the size of the key id stored in clear after the magic.
const keyIDSize = 8

// keyPrefix starts the printed form of a backup key.
const keyPrefix = "JBK1-"

// Errors Open returns (wrapped), one per thing an operator does next.
var (
	// ErrNotBackup: the file is not a sealed jaco backup at all.
	ErrNotBackup = errors.New("not a jaco backup file")
	// ErrTruncated: the file ends before its sealed content does.
	ErrTruncated = errors.New("backup file is truncated")
	// ErrWrongKey: the file was sealed with another key.
	ErrWrongKey = errors.New("this key does not open the backup file (it was sealed with another key)")
	// ErrCorrupted: the sealed content fails authentication.
	ErrCorrupted = errors.New("backup file is corrupted or truncated: its sealed content fails authentication")
	// ErrBadKey: the key text is not a backup key.
	ErrBadKey = errors.New("not a backup key")
)

// Key opens one backup file. It exists only in the operator's keeping.
type Key encryption.Key

// NewKey draws a random key.
func NewKey() (Key, error) {
	k, err := encryption.NewKey()
	return Key(k), err
}

// String is the printed form: JBK1- then the key in unpadded base64url.
func (k Key) String() string { return keyPrefix + base64.RawURLEncoding.EncodeToString(k[:]) }

// ParseKey reads the printed form; surrounding white space is ignored.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, keyPrefix) {
		return Key{}, fmt.Errorf("%w: want text starting with %s", ErrBadKey, keyPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(keyPrefix):])
	var k Key
	if err != nil || len(raw) != len(k) {
		return Key{}, fmt.Errorf("%w: want %s followed by %d base64url characters", ErrBadKey, keyPrefix, base64.RawURLEncoding.EncodedLen(len(k)))
	}
	copy(k[:], raw)
	return k, nil
}

// id names the key without revealing it, so that Open can tell a wrong
// key from a damaged file.
func (k Key) id() []byte {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("jaco backup key id"))
	return m.Sum(nil)[:keyIDSize]
}

// Seal seals payload into the content of a backup file: magic, key id,
// then the payload sealed with XChaCha20-Poly1305 with magic and key id as
// associated data.
func Seal(payload []byte, k Key) ([]byte, error) {
	s, err := encryption.NewSealer(encryption.Key(k))
	if err != nil {
		return nil, err
	}
	head := append(append([]byte{}, fileMagic...), k.id()...)
	return append(head, s.Seal(payload, head)...), nil
}

// Open reverses Seal, refusing a file that is not a backup, truncated,
// sealed with another key or altered.
func Open(file []byte, k Key) ([]byte, error) {
	headLen := len(fileMagic) + keyIDSize
	if len(file) < len(fileMagic) {
		if bytes.HasPrefix(fileMagic, file) {
			return nil, fmt.Errorf("%w: %d bytes", ErrTruncated, len(file))
		}
		return nil, ErrNotBackup
	}
	if !bytes.Equal(file[:len(fileMagic)], fileMagic) {
		return nil, fmt.Errorf("%w: unknown header %q", ErrNotBackup, file[:len(fileMagic)])
	}
	// A sealed record is at least a format byte, a 24-byte nonce and a
	// 16-byte tag.
	if len(file) < headLen+1+24+16 {
		return nil, fmt.Errorf("%w: %d bytes", ErrTruncated, len(file))
	}
	head := file[:headLen]
	if !hmac.Equal(head[len(fileMagic):], k.id()) {
		return nil, ErrWrongKey
	}
	s, err := encryption.NewSealer(encryption.Key(k))
	if err != nil {
		return nil, err
	}
	payload, err := s.Open(file[headLen:], head)
	if err != nil {
		return nil, ErrCorrupted
	}
	return payload, nil
}

// Decode opens a backup file's content and decodes the backup in it.
func Decode(file []byte, k Key) (*Backup, error) {
	payload, err := Open(file, k)
	if err != nil {
		return nil, err
	}
	return Unmarshal(payload)
}
