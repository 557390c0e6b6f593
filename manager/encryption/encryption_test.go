package encryption

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	cur, _ := NewKey()
	old, _ := NewKey()
	keys := DataKeys{Current: cur, Previous: []Key{old}}
	if err := WriteKeyFile(path, keys, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := ReadKeyFile(path, nil)
	if err != nil || got.Current != cur || len(got.Previous) != 1 || got.Previous[0] != old {
		t.Fatalf("ReadKeyFile = %x, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(path, nil); err == nil {
		t.Fatal("malformed key file accepted")
	}
	// The format before autolock: one raw key.
	if err := os.WriteFile(path, cur[:], 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadKeyFile(path, nil); err != nil || got.Current != cur {
		t.Fatalf("raw key file: %x, %v", got, err)
	}
}

// A sealed key file holds neither key in any form, opens only with its
// unlock key, and says locked otherwise.
func TestSealedKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dek")
	dek, _ := NewKey()
	kek, _ := NewKey()
	if err := WriteKeyFile(path, DataKeys{Current: dek}, &kek); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, k := range []Key{dek, kek} {
		if bytes.Contains(b, k[:]) || bytes.Contains(b, []byte(hex.EncodeToString(k[:]))) ||
			bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(k[:])[:40])) {
			t.Fatal("sealed key file holds a key")
		}
	}
	if sealed, err := KeyFileSealed(path); err != nil || !sealed {
		t.Fatalf("KeyFileSealed = %v, %v", sealed, err)
	}
	if _, err := ReadKeyFile(path, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("no unlock key: err = %v, want ErrLocked", err)
	}
	wrong, _ := NewKey()
	if _, err := ReadKeyFile(path, &wrong); !errors.Is(err, ErrLocked) {
		t.Fatalf("wrong unlock key: err = %v, want ErrLocked", err)
	}
	got, err := ReadKeyFile(path, &kek)
	if err != nil || got.Current != dek {
		t.Fatalf("ReadKeyFile with the unlock key = %x, %v", got, err)
	}
}

func TestSealedPrivateKey(t *testing.T) {
	keyPEM := []byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----\n")
	oldKey, _ := NewKey()
	newKey, _ := NewKey()
	old, _ := NewSealer(oldKey)
	sealed := SealPrivateKey(keyPEM, old)
	if !PrivateKeySealed(sealed) || bytes.Contains(sealed, keyPEM[28:60]) {
		t.Fatalf("sealed key %q", sealed)
	}
	if _, err := OpenPrivateKey(sealed, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("no data keys: err = %v, want ErrLocked", err)
	}
	onlyNew, _ := NewSealer(newKey)
	if _, err := OpenPrivateKey(sealed, onlyNew); !errors.Is(err, ErrOpen) {
		t.Fatalf("other data key: err = %v, want ErrOpen", err)
	}
	rotating, _ := NewSealer(newKey, oldKey)
	got, err := OpenPrivateKey(sealed, rotating)
	if err != nil || !bytes.Equal(got, keyPEM) {
		t.Fatalf("OpenPrivateKey during a rotation = %q, %v", got, err)
	}
	if got, err := OpenPrivateKey(keyPEM, nil); err != nil || !bytes.Equal(got, keyPEM) {
		t.Fatalf("a key in clear comes back as it is: %q, %v", got, err)
	}
}

func TestUnlockKeyText(t *testing.T) {
	k, _ := NewKey()
	text := FormatUnlockKey(k)
	if !strings.HasPrefix(text, "JACOKEY1-") || len(text) != len("JACOKEY1-")+52 {
		t.Fatalf("FormatUnlockKey = %q", text)
	}
	if got, err := ParseUnlockKey(" " + text + "\n"); err != nil || got != k {
		t.Fatalf("ParseUnlockKey = %x, %v", got, err)
	}
	for _, bad := range []string{"", text[:len(text)-1], strings.ToUpper(text), "JACO1-" + text[9:], text + "a"} {
		if _, err := ParseUnlockKey(bad); !errors.Is(err, ErrMalformedUnlockKey) {
			t.Errorf("ParseUnlockKey(%q): err = %v, want ErrMalformedUnlockKey", bad, err)
		}
	}
}

// A rotating Sealer seals with the new key and still opens the old one's
// records.
func TestSealerOpensWithOlderKeys(t *testing.T) {
	oldK, _ := NewKey()
	newK, _ := NewKey()
	old, _ := NewSealer(oldK)
	both, _ := NewSealer(newK, oldK)
	onlyNew, _ := NewSealer(newK)
	rec := old.Seal([]byte("before"), nil)
	if got, err := both.Open(rec, nil); err != nil || string(got) != "before" {
		t.Fatalf("rotating sealer opens old record: %q, %v", got, err)
	}
	fresh := both.Seal([]byte("after"), nil)
	if _, err := old.Open(fresh, nil); !errors.Is(err, ErrOpen) {
		t.Fatal("a new record opens with the old key")
	}
	if got, err := onlyNew.Open(fresh, nil); err != nil || string(got) != "after" {
		t.Fatalf("new key opens new record: %q, %v", got, err)
	}
}
