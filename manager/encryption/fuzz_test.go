package encryption

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseUnlockKey: the text an operator pastes is refused with
// ErrMalformedUnlockKey unless it is a key, and a key parses back from the
// text FormatUnlockKey gives it.
func FuzzParseUnlockKey(f *testing.F) {
	k, err := NewKey()
	if err != nil {
		f.Fatal(err)
	}
	text := FormatUnlockKey(k)
	for _, s := range []string{text, text + "\n", "  " + text, text[:len(text)-1], text + "a",
		unlockKeyPrefix, "JACOKEY1-" + string(bytes.ToUpper([]byte(text[9:]))), "", "JACOKEY2-abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseUnlockKey(s)
		if err != nil {
			if !errors.Is(err, ErrMalformedUnlockKey) {
				t.Fatalf("ParseUnlockKey error %v does not wrap ErrMalformedUnlockKey", err)
			}
			return
		}
		again, err := ParseUnlockKey(FormatUnlockKey(k))
		if err != nil || again != k {
			t.Fatalf("key parsed from %q does not round-trip: %v", s, err)
		}
	})
}

// FuzzSealerOpen: a sealed record read from disk that was not sealed with
// the key and associated data is refused with ErrOpen, never a panic.
func FuzzSealerOpen(f *testing.F) {
	var k Key
	copy(k[:], "a fixed key so seeds stay valid!")
	s, err := NewSealer(k)
	if err != nil {
		f.Fatal(err)
	}
	ad := []byte("fuzz")
	f.Add(s.Seal([]byte("plaintext"), ad), []byte("plaintext"))
	f.Add(s.Seal(nil, ad), []byte{})
	f.Add([]byte{}, []byte{})
	f.Add([]byte{formatXChaCha}, []byte{})
	f.Fuzz(func(t *testing.T, sealed, plain []byte) {
		got, err := s.Open(sealed, ad)
		if err != nil {
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("Open error %v does not wrap ErrOpen", err)
			}
		} else if len(got) >= len(sealed) {
			t.Fatalf("opened %d bytes from a %d-byte record", len(got), len(sealed))
		}
		back, err := s.Open(s.Seal(plain, ad), ad)
		if err != nil || !bytes.Equal(back, plain) {
			t.Fatalf("seal/open does not round-trip: %v", err)
		}
	})
}
