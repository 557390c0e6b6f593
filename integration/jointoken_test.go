package integration

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestIssueJoinToken: an operator mints join tokens locally and over TCP.
// The write goes through the Control service's raftproxy wrapper on the
// leader; the token is printed once and kept only as a hash.
func TestIssueJoinToken(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "issuer")
	wantError(t, d.jaco("node", "issue-join-token"), 1, "cluster_uninitialized")
	op := d.initQuiet()

	one := regexp.MustCompile(`\A` + tokenPattern.String() + `\n\z`)
	fp := strings.Split(op, "-")[1]
	var tokens []string
	for _, r := range []result{
		d.jaco("node", "issue-join-token", "--role", "manager"),
		d.jacoTCP(op, "node", "issue-join-token", "--ttl", "1h"),
	} {
		wantOK(t, r)
		if !one.MatchString(r.stdout) {
			t.Fatalf("issue-join-token printed %q, want one line holding only the token", r.stdout)
		}
		tok := strings.TrimSpace(r.stdout)
		if got := strings.Split(tok, "-")[1]; got != fp {
			t.Errorf("join token names CA %s, want the cluster's %s", got, fp)
		}
		tokens = append(tokens, tok)
	}
	if tokens[0] == tokens[1] {
		t.Fatal("two issued tokens are the same")
	}

	wantError(t, d.jaco("node", "issue-join-token", "--ttl", "-1s"), 1, "invalid_spec")
	wantError(t, d.jaco("node", "issue-join-token", "--role", "boss"), 2, "usage")

	d.stop()
	err := filepath.WalkDir(d.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, tok := range tokens {
			secret := tok[strings.LastIndex(tok, "-")+1:]
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds a join token's secret in clear", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
