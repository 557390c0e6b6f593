package integration

import (
	"crypto/rand"
	"reflect"
	"strings"
	"testing"
)

// TestTCPOperatorAccess checks who gets in over TCP: only the holder of the
// operator token of this very cluster. The token's fingerprint pins the
// server's CA (a token of another cluster cannot even complete TLS), and its
// secret authenticates the caller (a forged secret is refused by the server).
func TestTCPOperatorAccess(t *testing.T) {
	t.Parallel()
	d, other := startDaemon(t, "home"), startDaemon(t, "elsewhere")
	token, otherToken := d.initQuiet(), other.initQuiet()
	want := d.status()
	wantNodes, err := d.tryNodes()
	if err != nil {
		t.Fatal(err)
	}

	nodes, err := decode[[]nodeEntry](d.jacoTCP(token, "node", "ls", "--format", "json"))
	if err != nil {
		t.Fatalf("node ls over TCP with the operator token: %v", err)
	}
	if !reflect.DeepEqual(nodes, wantNodes) {
		t.Errorf("node ls over TCP %+v, want %+v as on the socket", nodes, wantNodes)
	}
	// Tokens kept in files and env files often end in a newline.
	if _, err := decode[[]nodeEntry](d.jacoTCP(token+"\n", "node", "ls", "--format", "json")); err != nil {
		t.Errorf("node ls with the token and a trailing newline: %v", err)
	}

	forged := token[:strings.LastIndex(token, "-")+1] + otherSecret(t, token)
	for _, tc := range []struct {
		name string
		run  func() result
		code int
		word string
	}{
		{"wrong secret", func() result { return d.jacoTCP(forged, "node", "ls") }, 1, "permission_denied"},
		// The client refuses the server before sending the token.
		{"token of another cluster", func() result { return d.jacoTCP(otherToken, "node", "ls") }, 1, "ca_mismatch"},
		{"no token", func() result { return jaco(nil, "--server", d.addr, "node", "ls") }, 2, "usage"},
		// init is for the machine's own admin, on the local socket only.
		{"init over TCP", func() result { return d.jacoTCP(token, "cluster", "init") }, 1, "permission_denied"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantError(t, tc.run(), tc.code, tc.word) })
	}

	if got := d.status(); !reflect.DeepEqual(got, want) {
		t.Errorf("refused calls changed the cluster: status %+v, want %+v", got, want)
	}
}

// otherSecret returns a well-formed token secret that differs from token's.
func otherSecret(t testing.TB, token string) string {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	s := secretEncoding.EncodeToString(b)
	if len(s) != 52 || strings.HasSuffix(token, s) {
		t.Fatalf("bad forged secret %q", s)
	}
	return s
}
