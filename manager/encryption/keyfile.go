package encryption

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/jaco-project/jaco/internal/durable"
)

// ErrLocked is returned when a file is sealed with the unlock key and no
// key, or the wrong one, was given to open it.
var ErrLocked = errors.New("sealed with the unlock key")

// PEM block types of the files this package writes. A sealed block's
// content is bound to its block type, so one kind cannot be passed off as
// the other.
const (
	blockDataKeys       = "JACO DATA KEYS"
	blockSealedDataKeys = "JACO SEALED DATA KEYS"
	blockSealedKey      = "JACO SEALED PRIVATE KEY"
)

// DataKeys are a manager's data-encryption keys: Current seals, Previous
// (during a rotation only) still opens what was written before.
type DataKeys struct {
	Current  Key
	Previous []Key
}

// Sealer returns a Sealer for the keys.
func (d DataKeys) Sealer() (*Sealer, error) { return NewSealer(d.Current, d.Previous...) }

// WriteKeyFile stores keys at path (mode 0600), atomically: a crash leaves
// the old file or the new one. With a non-nil kek the keys are sealed with
// it; otherwise they are written in clear.
func WriteKeyFile(path string, keys DataKeys, kek *Key) error {
	var raw []byte
	for _, k := range append([]Key{keys.Current}, keys.Previous...) {
		raw = append(raw, k[:]...)
	}
	block := &pem.Block{Type: blockDataKeys, Bytes: raw}
	if kek != nil {
		sealed, err := sealWith(*kek, raw, blockSealedDataKeys)
		if err != nil {
			return err
		}
		block = &pem.Block{Type: blockSealedDataKeys, Bytes: sealed}
	}
	if err := durable.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}

// KeyFileSealed reports whether the key file at path is sealed with an
// unlock key.
func KeyFileSealed(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read key file: %w", err)
	}
	block, _ := pem.Decode(b)
	return block != nil && block.Type == blockSealedDataKeys, nil
}

// ReadKeyFile loads the keys WriteKeyFile stored. kek may be nil for a
// file in clear; a sealed file needs the unlock key it was sealed with
// (ErrLocked otherwise). A file of exactly one raw key is the format
// written before autolock existed.
func ReadKeyFile(path string, kek *Key) (DataKeys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return DataKeys{}, fmt.Errorf("read key file: %w", err)
	}
	if len(b) == KeySize {
		var k Key
		copy(k[:], b)
		return DataKeys{Current: k}, nil
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return DataKeys{}, fmt.Errorf("key file %s: neither a raw key nor a PEM block", path)
	}
	raw := block.Bytes
	switch block.Type {
	case blockDataKeys:
	case blockSealedDataKeys:
		if kek == nil {
			return DataKeys{}, fmt.Errorf("key file %s: %w", path, ErrLocked)
		}
		if raw, err = openWith(*kek, raw, blockSealedDataKeys); err != nil {
			return DataKeys{}, fmt.Errorf("key file %s: %w", path, err)
		}
	default:
		return DataKeys{}, fmt.Errorf("key file %s: unknown block %q", path, block.Type)
	}
	if len(raw) == 0 || len(raw)%KeySize != 0 {
		return DataKeys{}, fmt.Errorf("key file %s holds %d bytes, want a multiple of %d", path, len(raw), KeySize)
	}
	var keys DataKeys
	for i := 0; i < len(raw); i += KeySize {
		var k Key
		copy(k[:], raw[i:i+KeySize])
		if i == 0 {
			keys.Current = k
		} else {
			keys.Previous = append(keys.Previous, k)
		}
	}
	return keys, nil
}

// SealPrivateKey wraps a PEM private key in a block sealed with the data
// keys (their current one): with autolock on, those are sealed with the
// unlock key, so the private key is as locked as the raft state, and a
// change of unlock key rewrites one file only. A nil sealer returns keyPEM
// as it is.
func SealPrivateKey(keyPEM []byte, s *Sealer) []byte {
	if s == nil {
		return keyPEM
	}
	return pem.EncodeToMemory(&pem.Block{Type: blockSealedKey, Bytes: s.Seal(keyPEM, []byte(blockSealedKey))})
}

// OpenPrivateKey reverses SealPrivateKey with any of the data keys. A key
// that is not sealed comes back as it is; a sealed one without a sealer
// is ErrLocked.
func OpenPrivateKey(data []byte, s *Sealer) ([]byte, error) {
	if !PrivateKeySealed(data) {
		return data, nil
	}
	if s == nil {
		return nil, fmt.Errorf("private key: %w", ErrLocked)
	}
	block, _ := pem.Decode(data)
	keyPEM, err := s.Open(block.Bytes, []byte(blockSealedKey))
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	return keyPEM, nil
}

// PrivateKeySealed reports whether data is a private key SealPrivateKey
// sealed.
func PrivateKeySealed(data []byte) bool {
	block, _ := pem.Decode(data)
	return block != nil && block.Type == blockSealedKey
}

func sealWith(kek Key, plain []byte, purpose string) ([]byte, error) {
	s, err := NewSealer(kek)
	if err != nil {
		return nil, err
	}
	return s.Seal(plain, []byte(purpose)), nil
}

func openWith(kek Key, sealed []byte, purpose string) ([]byte, error) {
	s, err := NewSealer(kek)
	if err != nil {
		return nil, err
	}
	plain, err := s.Open(sealed, []byte(purpose))
	if err != nil {
		return nil, fmt.Errorf("%w: the unlock key given is not the one it was sealed with", ErrLocked)
	}
	return bytes.Clone(plain), nil
}
