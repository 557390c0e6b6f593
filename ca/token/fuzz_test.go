package token

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: join and operator tokens arrive from users and the network.
// Anything but a token is ErrMalformed, and a token that parses is in its
// one canonical text form (so that its Hash is the one the cluster stored).
func FuzzParse(f *testing.F) {
	tok, err := New(testFP)
	if err != nil {
		f.Fatal(err)
	}
	s := tok.String()
	for _, seed := range []string{s, s + "\n", s[:len(s)-1], strings.ToUpper(s), "JACO1-" + testFP + "-",
		"JACO2-" + testFP + "-" + tok.Secret, "JACO1--", "", "---"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap ErrMalformed", err)
			}
			if tok != (Token{}) {
				t.Fatalf("Parse returned %+v with an error", tok)
			}
			return
		}
		if tok.String() != strings.TrimSpace(s) {
			t.Fatalf("token %q parsed from %q is not its canonical form", tok.String(), s)
		}
		if again, err := Parse(tok.String()); err != nil || again != tok {
			t.Fatalf("token does not round-trip: %v", err)
		}
	})
}
