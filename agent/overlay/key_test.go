package overlay

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

// testSealer stands in for the node's *encryption.Sealer (which the agent
// may not import here): an AEAD with its nonce in front.
type testSealer struct {
	key [chacha20poly1305.KeySize]byte
}

func newTestSealer(t *testing.T) *testSealer {
	s := &testSealer{}
	if _, err := rand.Read(s.key[:]); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *testSealer) Seal(plain, ad []byte) []byte {
	a, _ := chacha20poly1305.NewX(s.key[:])
	nonce := make([]byte, a.NonceSize())
	_, _ = rand.Read(nonce)
	return a.Seal(nonce, nonce, plain, ad)
}

func (s *testSealer) Open(sealed, ad []byte) ([]byte, error) {
	a, _ := chacha20poly1305.NewX(s.key[:])
	if len(sealed) < a.NonceSize() {
		return nil, errors.New("short")
	}
	return a.Open(nil, sealed[:a.NonceSize()], sealed[a.NonceSize():], ad)
}

func TestPrivateKeyNeverPrints(t *testing.T) {
	k, err := GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	secretB64 := k.k.String() // wgtypes' own base64 form
	cfg := Config{PrivateKey: k, Addresses: prefixes(t, "198.19.1.1/32")}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "key", k, "cfg", cfg)
	outputs := []string{
		fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s %q %x %X", k, k, k, k, k, k, k),
		fmt.Sprintf("%+v %#v", cfg, cfg), logged.String(),
	}
	if b, err := json.Marshal(cfg); err == nil {
		outputs = append(outputs, string(b))
	}
	hexKey := fmt.Sprintf("%x", k.k[:])
	for _, out := range outputs {
		if strings.Contains(out, secretB64) || strings.Contains(strings.ToLower(out), hexKey) {
			t.Errorf("private key leaked in %q", out)
		}
	}
	if !strings.Contains(fmt.Sprint(k), redacted) {
		t.Errorf("fmt.Sprint(key) = %q, want %q", fmt.Sprint(k), redacted)
	}
}

func TestSaveLoadKey(t *testing.T) {
	dir := t.TempDir()
	s := newTestSealer(t)
	k, err := GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sealer Sealer
	}{
		{"clear", nil},
		{"typed nil sealer is clear", (*testSealer)(nil)},
		{"sealed", s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".key")
			if err := SaveKey(path, k, tc.sealer); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			data, _ := os.ReadFile(path)
			sealed := bytes.Contains(data, []byte(blockSealed))
			if sealed != !noSealer(tc.sealer) {
				t.Errorf("file sealed=%v, want %v:\n%s", sealed, !noSealer(tc.sealer), data)
			}
			got, err := LoadKey(path, tc.sealer)
			if err != nil {
				t.Fatal(err)
			}
			if got.PublicKey() != k.PublicKey() {
				t.Error("loaded key differs from the saved one")
			}
		})
	}
	sealedPath := filepath.Join(dir, "sealed.key")
	if _, err := LoadKey(sealedPath, nil); !errors.Is(err, ErrKeyLocked) {
		t.Errorf("sealed key without sealer: %v, want ErrKeyLocked", err)
	}
	if _, err := LoadKey(sealedPath, newTestSealer(t)); err == nil {
		t.Error("sealed key opened with another sealer")
	}
	// A clear file opens with a sealer too: a node turning autolock on
	// rewrites it sealed afterwards.
	if _, err := LoadKey(filepath.Join(dir, "clear.key"), s); err != nil {
		t.Errorf("clear key with a sealer: %v", err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wg.key")
	s := newTestSealer(t)
	k1, created, err := LoadOrCreateKey(path, s)
	if err != nil || !created {
		t.Fatalf("first: created=%v err=%v", created, err)
	}
	k2, created, err := LoadOrCreateKey(path, s)
	if err != nil || created {
		t.Fatalf("second: created=%v err=%v", created, err)
	}
	if k1.PublicKey() != k2.PublicKey() {
		t.Error("second load made a new key")
	}
	if _, _, err := LoadOrCreateKey(path, nil); !errors.Is(err, ErrKeyLocked) {
		t.Errorf("locked key file: %v, want ErrKeyLocked (and no new key over it)", err)
	}
}

func FuzzParseKeyFile(f *testing.F) {
	k, _ := GeneratePrivateKey()
	s := &testSealer{}
	dir := f.TempDir()
	for i, sl := range []Sealer{nil, s} {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := SaveKey(path, k, sl); err != nil {
			f.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		f.Add(data)
	}
	f.Add([]byte("-----BEGIN JACO WIREGUARD PRIVATE KEY-----\n-----END JACO WIREGUARD PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseKeyFile(data, s)
		if err != nil {
			return
		}
		// What decodes round-trips.
		path := filepath.Join(t.TempDir(), "k")
		if err := SaveKey(path, got, s); err != nil {
			t.Fatal(err)
		}
		again, err := LoadKey(path, s)
		if err != nil || again.k != got.k {
			t.Fatalf("round trip: %v", err)
		}
	})
}
