package integration

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nodeKeyFiles are the files in a data dir allowed to hold a private key
// in the clear (without autolock): the node's own TLS key and its own
// overlay (WireGuard) key, which it needs to start.
var nodeKeyFiles = []string{filepath.Join("node", "key.pem"), filepath.Join("node", "overlay.key")}

// TestSecretsAtRest reads every byte a node writes to its data dir and
// looks for what an attacker with a copy of the disk (or a backup) must not
// find: the operator token, printed once and stored only as a hash, and
// any private key other than the node's own; the CA key lives in the raft
// state, sealed with the data key.
func TestSecretsAtRest(t *testing.T) {
	t.Parallel()
	// A snapshot after every entry, so the scan covers snapshot files too.
	d := startDaemon(t, "vault", "--snapshot-interval", "1")
	token := d.initQuiet()
	// A restart replays and rewrites raft state; scan what that leaves too.
	d.kill()
	d.restart()
	eventually(t, recoverTimeout, func() error { _, err := d.tryNodes(); return err })

	secret := token[strings.LastIndex(token, "-")+1:]
	rawSecret, err := secretEncoding.DecodeString(secret)
	if err != nil {
		t.Fatalf("token secret %q is not base32: %v", secret, err)
	}
	tokenForms := map[string][]byte{
		"the operator token":          []byte(token),
		"the operator token's secret": []byte(secret),
		"the secret's raw bytes":      rawSecret,
	}

	scanned := map[string]bool{}
	err = filepath.WalkDir(d.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(d.dir, path)
		if rel != "." { // the data dir itself is the operator's to set up
			checkOwnerOnly(t, rel, e)
		}
		if !e.Type().IsRegular() {
			return nil // the socket and directories hold no bytes
		}
		// WAL segments are preallocated to 64 MB; read them whole anyway,
		// a secret could sit anywhere in them.
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned[rel] = true
		for what, b := range tokenForms {
			if bytes.Contains(data, b) {
				t.Errorf("%s holds %s", rel, what)
			}
		}
		hasKey := bytes.Contains(data, []byte("PRIVATE KEY"))
		own := slices.Contains(nodeKeyFiles, rel)
		switch {
		case hasKey && !own:
			t.Errorf("%s holds a PEM private key in the clear", rel)
		case !hasKey && own:
			t.Errorf("%s holds no PEM private key; is the scan reading the right files?", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !scanned[nodeKeyFiles[0]] || !scanned[nodeKeyFiles[1]] || !anyUnder(scanned, filepath.Join("raft", "wal")) || !anyUnder(scanned, filepath.Join("raft", "snap")) {
		t.Errorf("scan missed the node key, the WAL or a snapshot; scanned %v", scanned)
	}

	// The daemon's log is often shipped off the machine: it must not have
	// the token either.
	if log := d.log(); strings.Contains(log, secret) {
		t.Errorf("the daemon's log holds the operator token's secret")
	}
}

// publicFiles are the files in node/ that others may read.
var publicFiles = map[string]bool{filepath.Join("node", "ca.pem"): true, filepath.Join("node", "cert.pem"): true}

// checkOwnerOnly fails when the entry at rel is open to group or others
// though it should not be: every directory jacod makes (they hold the
// sealed raft state and the keys) and every file in node/ but the two
// certificates (the node key and the data key are there in the clear).
func checkOwnerOnly(t testing.TB, rel string, e fs.DirEntry) {
	t.Helper()
	info, err := e.Info()
	if err != nil {
		t.Error(err)
		return
	}
	private := e.IsDir() || (filepath.Dir(rel) == "node" && !publicFiles[rel])
	if perm := info.Mode().Perm(); private && perm&0o077 != 0 {
		t.Errorf("%s has mode %v, want no access for group and others", rel, perm)
	}
}

func anyUnder(paths map[string]bool, dir string) bool {
	for p := range paths {
		if strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
