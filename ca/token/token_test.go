package token

import (
	"errors"
	"strings"
	"testing"
)

const testFP = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestTokenRoundTrip(t *testing.T) {
	tok, err := New(testFP)
	if err != nil {
		t.Fatal(err)
	}
	text := tok.String()
	if !strings.HasPrefix(text, "JACO1-"+testFP+"-") || len(tok.Secret) != 52 {
		t.Errorf("token text %q", text)
	}
	parsed, err := Parse(" " + text + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if parsed != tok {
		t.Errorf("parsed %+v, want %+v", parsed, tok)
	}
	other, err := New(testFP)
	if err != nil {
		t.Fatal(err)
	}
	if other.Secret == tok.Secret {
		t.Error("two tokens share a secret")
	}
}

func TestNewRefusesBadFingerprint(t *testing.T) {
	for _, fp := range []string{"", "abc", strings.ToUpper(testFP), testFP[:63] + "g", testFP + "00"} {
		if _, err := New(fp); !errors.Is(err, ErrMalformed) {
			t.Errorf("New(%q): err = %v, want ErrMalformed", fp, err)
		}
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	tok, err := New(testFP)
	if err != nil {
		t.Fatal(err)
	}
	s := tok.Secret
	for name, text := range map[string]string{
		"empty":               "",
		"no dashes":           "JACO1" + testFP + s,
		"two parts":           "JACO1-" + testFP,
		"four parts":          "JACO1-" + testFP + "-" + s + "-x",
		"other version":       "JACO2-" + testFP + "-" + s,
		"lowercase version":   "jaco1-" + testFP + "-" + s,
		"short fingerprint":   "JACO1-" + testFP[:62] + "-" + s,
		"uppercase hex":       "JACO1-" + strings.ToUpper(testFP) + "-" + s,
		"non-hex fingerprint": "JACO1-" + testFP[:63] + "z-" + s,
		"short secret":        "JACO1-" + testFP + "-" + s[:50],
		"long secret":         "JACO1-" + testFP + "-" + s + "aaaaaaaa",
		"uppercase secret":    "JACO1-" + testFP + "-" + strings.ToUpper(s),
		"padded secret":       "JACO1-" + testFP + "-" + s + "====",
		"bad base32":          "JACO1-" + testFP + "-" + s[:51] + "1",
		// The last character of 32 bytes of base32 carries 4 unused bits,
		// zero in the canonical form ('a' or 'q'); "b" sets one.
		"non-canonical": "JACO1-" + testFP + "-" + s[:51] + "b",
		"inner space":   "JACO1-" + testFP + "- " + s,
	} {
		_, err := Parse(text)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
			continue
		}
		if strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q reveals the secret", name, err)
		}
	}
}

func TestHashMatches(t *testing.T) {
	tok, err := New(testFP)
	if err != nil {
		t.Fatal(err)
	}
	hash := tok.Hash()
	if len(hash) != 32 {
		t.Fatalf("hash length %d", len(hash))
	}
	parsed, err := Parse(tok.String())
	if err != nil {
		t.Fatal(err)
	}
	if !HashMatches(hash, parsed) {
		t.Error("HashMatches(hash, same token) = false")
	}
	other, err := New(testFP)
	if err != nil {
		t.Fatal(err)
	}
	if HashMatches(hash, other) {
		t.Error("HashMatches(hash, other token) = true")
	}
	if HashMatches(hash[:31], parsed) || HashMatches(nil, parsed) {
		t.Error("HashMatches accepted a truncated hash")
	}
}

func TestFromSecret(t *testing.T) {
	secret := []byte(strings.Repeat("k", SecretBytes))
	tok, err := FromSecret(testFP, secret)
	if err != nil {
		t.Fatal(err)
	}
	again, err := FromSecret(testFP, secret)
	if err != nil || again != tok {
		t.Errorf("the same secret made %+v, then %+v (%v)", tok, again, err)
	}
	if parsed, err := Parse(tok.String()); err != nil || parsed != tok {
		t.Errorf("Parse of a token from a secret: %+v, %v", parsed, err)
	}
	if _, err := FromSecret(testFP, secret[1:]); !errors.Is(err, ErrMalformed) {
		t.Errorf("FromSecret of %d bytes: err = %v, want ErrMalformed", SecretBytes-1, err)
	}
}
