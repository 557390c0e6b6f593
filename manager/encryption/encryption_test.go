package encryption

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("the quick brown fox")
	sealed := s.Seal(plain, []byte("entry/7/2"))
	if bytes.Contains(sealed, plain) {
		t.Fatal("sealed record holds the plaintext")
	}
	got, err := s.Open(sealed, []byte("entry/7/2"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v; want %q", got, err, plain)
	}
	if _, err := s.Open(sealed, []byte("entry/8/2")); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open with other position: err = %v, want ErrOpen", err)
	}
	other, _ := NewKey()
	so, _ := NewSealer(other)
	if _, err := so.Open(sealed, []byte("entry/7/2")); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open with other key: err = %v, want ErrOpen", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, []byte("entry/7/2")); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open of altered record: err = %v, want ErrOpen", err)
	}
	if _, err := s.Open([]byte{1, 2}, nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open of short record: err = %v, want ErrOpen", err)
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dek")
	key, _ := NewKey()
	if err := WriteKeyFile(path, key); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := ReadKeyFile(path)
	if err != nil || got != key {
		t.Fatalf("ReadKeyFile = %x, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(path); err == nil {
		t.Fatal("short key file accepted")
	}
}
