package overlay

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/jaco-project/jaco/internal/durable"
)

// redacted is what a PrivateKey prints as, whatever the verb.
const redacted = "[redacted]"

// PrivateKey is this node's WireGuard private key. It never leaves the
// node: it prints, logs and marshals as "[redacted]" or not at all, so a
// Config that holds one can be logged whole.
type PrivateKey struct {
	k wgtypes.Key
}

// PublicKey is a node's WireGuard public key, as published in its Node
// object.
type PublicKey = wgtypes.Key

// GeneratePrivateKey makes a fresh key pair from crypto/rand.
func GeneratePrivateKey() (PrivateKey, error) {
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return PrivateKey{}, fmt.Errorf("generate wireguard key: %w", err)
	}
	return PrivateKey{k: k}, nil
}

// ParsePublicKey reads a public key in WireGuard's base64 form.
func ParsePublicKey(s string) (PublicKey, error) {
	k, err := wgtypes.ParseKey(s)
	if err != nil {
		return PublicKey{}, fmt.Errorf("wireguard public key: %w", err)
	}
	return k, nil
}

// IsZero reports whether k was never set.
func (k PrivateKey) IsZero() bool { return k.k == wgtypes.Key{} }

// PublicKey derives the key peers know this node by.
func (k PrivateKey) PublicKey() PublicKey { return k.k.PublicKey() }

// String, GoString, Format and LogValue keep the key out of every printout.
func (PrivateKey) String() string               { return redacted }
func (PrivateKey) GoString() string             { return redacted }
func (PrivateKey) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, redacted) }
func (PrivateKey) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (PrivateKey) MarshalText() ([]byte, error) { return nil, errMarshalKey }

var errMarshalKey = errors.New("a wireguard private key is never marshalled; use SaveKey")

// Sealer seals the key file at rest. *encryption.Sealer (the node's data
// keys, which seal its TLS key under autolock, docs/design.md §13) has
// this method set; the agent passes it through without importing the
// manager.
type Sealer interface {
	Seal(plaintext, ad []byte) []byte
	Open(sealed, ad []byte) ([]byte, error)
}

// PEM block types of the key file: in clear, or sealed with a Sealer. The
// sealed type is also the associated data, so a sealed blob of another
// kind (a TLS key sealed with the same data keys) does not open as this.
const (
	blockClear  = "JACO WIREGUARD PRIVATE KEY"
	blockSealed = "JACO SEALED WIREGUARD PRIVATE KEY"
)

// ErrKeyLocked is returned by LoadKey for a sealed key file without a
// sealer: the node is locked until its unlock key is given back.
var ErrKeyLocked = errors.New("wireguard private key is sealed and no sealer was given")

// noSealer reports whether s is nil, including a typed nil pointer (the
// node holds a nil *encryption.Sealer while autolock is off, and a nil
// pointer in the interface would otherwise panic on first use).
func noSealer(s Sealer) bool {
	if s == nil {
		return true
	}
	v := reflect.ValueOf(s)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// SaveKey writes k to path (mode 0600, atomically and durably), sealed
// with s, or in clear when s is nil, as a worker's TLS key is.
func SaveKey(path string, k PrivateKey, s Sealer) error {
	if k.IsZero() {
		return errors.New("save wireguard key: the key is unset")
	}
	block := &pem.Block{Type: blockClear, Bytes: k.k[:]}
	if !noSealer(s) {
		block = &pem.Block{Type: blockSealed, Bytes: s.Seal(k.k[:], []byte(blockSealed))}
	}
	if err := durable.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("save wireguard key: %w", err)
	}
	return nil
}

// LoadKey reads what SaveKey wrote. A sealed file needs s (ErrKeyLocked
// otherwise); a clear one opens with or without it.
func LoadKey(path string, s Sealer) (PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("load wireguard key: %w", err)
	}
	k, err := parseKeyFile(data, s)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("load wireguard key %s: %w", path, err)
	}
	return k, nil
}

// LoadOrCreateKey loads the key at path, or makes and saves one when there
// is no file yet; created says which.
func LoadOrCreateKey(path string, s Sealer) (k PrivateKey, created bool, err error) {
	k, err = LoadKey(path, s)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return k, false, err
	}
	if k, err = GeneratePrivateKey(); err != nil {
		return PrivateKey{}, false, err
	}
	if err := SaveKey(path, k, s); err != nil {
		return PrivateKey{}, false, err
	}
	return k, true, nil
}

// parseKeyFile decodes the key file's bytes (fuzzed: FuzzParseKeyFile).
func parseKeyFile(data []byte, s Sealer) (PrivateKey, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return PrivateKey{}, errors.New("not a PEM key file")
	}
	if len(rest) != 0 {
		return PrivateKey{}, errors.New("trailing bytes after the key block")
	}
	raw := block.Bytes
	switch block.Type {
	case blockClear:
	case blockSealed:
		if noSealer(s) {
			return PrivateKey{}, ErrKeyLocked
		}
		var err error
		if raw, err = s.Open(block.Bytes, []byte(blockSealed)); err != nil {
			return PrivateKey{}, fmt.Errorf("open sealed key: %w", err)
		}
	default:
		return PrivateKey{}, fmt.Errorf("unexpected PEM block %q", block.Type)
	}
	if len(raw) != wgtypes.KeyLen {
		return PrivateKey{}, fmt.Errorf("key is %d bytes, want %d", len(raw), wgtypes.KeyLen)
	}
	var k PrivateKey
	copy(k.k[:], raw)
	if k.IsZero() {
		return PrivateKey{}, errors.New("key is all zeros")
	}
	return k, nil
}
