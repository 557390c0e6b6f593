package encryption

import (
	"fmt"
	"os"

	"github.com/jaco-project/jaco/internal/durable"
)

// WriteKeyFile stores key at path (mode 0600), atomically: a crash leaves
// either no file or the whole key.
func WriteKeyFile(path string, key Key) error {
	if err := durable.WriteFile(path, key[:], 0o600); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}

// ReadKeyFile loads a key written by WriteKeyFile.
func ReadKeyFile(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("read key file: %w", err)
	}
	var k Key
	if len(b) != len(k) {
		return Key{}, fmt.Errorf("key file %s holds %d bytes, want %d", path, len(b), len(k))
	}
	copy(k[:], b)
	return k, nil
}
