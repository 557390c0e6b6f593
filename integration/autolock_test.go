package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

func (d *daemon) dekPath() string      { return datadir.Dir(d.dir).DataKeys() }
func (d *daemon) tlsKeyPath() string   { return filepath.Join(datadir.Dir(d.dir).Node(), ca.KeyFile) }
func (d *daemon) raftStateDir() string { return datadir.Dir(d.dir).Raft() }

// unlock runs `jaco node unlock` with the key on stdin.
func (d *daemon) unlock(key string) result {
	return runWithStdin(jacoBin, nil, strings.NewReader(key+"\n"), "--data-dir", d.dir, "node", "unlock")
}

// waitKeysSealed waits until the data keys in data dir dir of node name
// are sealed with unlock key key alone (any rotation of the data key
// finished) and its TLS key is sealed: only then does a restart need
// exactly that key.
func waitKeysSealed(t testing.TB, name, dir, key string) {
	t.Helper()
	kek, err := encryption.ParseUnlockKey(key)
	if err != nil {
		t.Fatalf("unlock key %q: %v", key, err)
	}
	eventually(t, 30*time.Second, func() error {
		keys, err := encryption.ReadKeyFile(datadir.Dir(dir).DataKeys(), &kek)
		if err != nil {
			return fmt.Errorf("%s data keys: %w", name, err)
		}
		if len(keys.Previous) > 0 {
			return fmt.Errorf("%s still rotating its data key", name)
		}
		b, err := os.ReadFile(filepath.Join(datadir.Dir(dir).Node(), ca.KeyFile))
		if err != nil || !encryption.PrivateKeySealed(b) {
			return fmt.Errorf("%s TLS key not sealed (%v)", name, err)
		}
		return nil
	})
}

// TestAutolock: autolock on seals every manager's keys and rotates its data
// key; a stopped manager's data dir holds nothing that opens its raft state
// or TLS key; a restarted manager is locked, refuses a wrong key (counted,
// nothing changed), opens with the key, and one that was down during a
// rotation opens once with the previous key, then only with the new one.
func TestAutolock(t *testing.T) {
	t.Parallel()
	ds := formManagers(t, 3)
	m1, m3 := ds[0], ds[2]
	wantOK(t, m1.jaco("node", "update", "--label-add", "era=before-autolock", "m1"))
	clearKeys, err := encryption.ReadKeyFile(m3.dekPath(), nil)
	if err != nil {
		t.Fatalf("data key before autolock: %v", err)
	}

	k1 := strings.TrimSpace(wantOK(t, m1.jaco("cluster", "update", "--autolock=true", "--quiet")).stdout)
	if _, err := encryption.ParseUnlockKey(k1); err != nil {
		t.Fatalf("cluster update --autolock=true --quiet printed %q: %v", k1, err)
	}
	if got := strings.TrimSpace(wantOK(t, m3.jaco("cluster", "unlock-key", "--quiet")).stdout); got != k1 {
		t.Fatalf("unlock-key on another manager shows %q, want %q", got, k1)
	}
	for _, d := range ds {
		waitKeysSealed(t, d.name, d.dir, k1)
	}
	wantOK(t, m1.jaco("node", "update", "--label-add", "era=after-autolock", "m2"))

	m3.stop()
	checkNothingOpensAtRest(t, m3, k1, clearKeys)

	// Rotate while m3 is down; the others re-seal with the new key.
	k2 := strings.TrimSpace(wantOK(t, m1.jaco("cluster", "unlock-key", "--rotate", "--quiet")).stdout)
	if k2 == k1 {
		t.Fatal("rotation kept the key")
	}
	waitKeysSealed(t, ds[0].name, ds[0].dir, k2)
	waitKeysSealed(t, ds[1].name, ds[1].dir, k2)
	wantOK(t, m1.jaco("node", "update", "--label-add", "era=after-rotation", "m3"))

	m3.start()
	if s := m3.status(); s.State != "locked" {
		t.Fatalf("restarted manager is %q, want locked", s.State)
	}
	wantError(t, m3.jaco("node", "ls"), 1, "locked")
	before := dirDigest(t, m3.dir)
	wrong, _ := encryption.NewKey()
	wantError(t, m3.unlock(encryption.FormatUnlockKey(wrong)), 1, "permission_denied")
	// The new key does not open what was sealed before the rotation.
	wantError(t, m3.unlock(k2), 1, "permission_denied")
	if s := m3.status(); s.State != "locked" || s.FailedUnlockAttempts != 2 {
		t.Fatalf("after two wrong keys: state %q, failed attempts %d; want locked, 2", s.State, s.FailedUnlockAttempts)
	}
	if after := dirDigest(t, m3.dir); after != before {
		t.Fatalf("a refused unlock changed the data dir:\nbefore %s\nafter  %s", before, after)
	}

	// The previous key opens it once; it then adopts the new one.
	if r := wantOK(t, m3.unlock(k1)); !strings.Contains(r.stdout, "ready") {
		t.Fatalf("unlock printed %q, want the ready state", r.stdout)
	}
	waitKeysSealed(t, m3.name, m3.dir, k2)
	eventually(t, 30*time.Second, func() error {
		out := m3.jaco("node", "ls", "--format", "json")
		if err := out.err(); err != nil {
			return err
		}
		if !strings.Contains(out.stdout, "after-rotation") {
			return errors.New("m3 has not caught up with the label written while it was down")
		}
		return nil
	})

	m3.restart()
	wantError(t, m3.unlock(k1), 1, "permission_denied")
	wantOK(t, m3.unlock(k2))
	waitVoters(t, m3, 3, 3)
	for _, want := range []string{"before-autolock", "after-autolock", "after-rotation"} {
		if out := wantOK(t, m3.jaco("node", "ls", "--format", "json")).stdout; !strings.Contains(out, want) {
			t.Errorf("label %s missing on m3 after unlock: %s", want, out)
		}
	}
	wantOK(t, m3.jaco("node", "update", "--label-add", "era=after-unlock", "m1"))

	// A manager joining while autolock is on seals its fresh keys too, and
	// comes back locked.
	m4 := startDaemon(t, "m4", "--node-name", "m4")
	wantOK(t, m4.jaco("node", "join", "--peer", m1.addr, "--token", m1.joinToken("manager")))
	waitKeysSealed(t, m4.name, m4.dir, k2)
	m4.restart()
	wantError(t, m4.jaco("node", "ls"), 1, "locked")
	wantOK(t, m4.unlock(k2))
	waitVoters(t, m4, 4, 3)

	// Autolock off: keys back in clear; a restart needs no unlock.
	wantOK(t, m1.jaco("cluster", "update", "--autolock=false"))
	eventually(t, 30*time.Second, func() error {
		if sealed, err := encryption.KeyFileSealed(m3.dekPath()); err != nil || sealed {
			return fmt.Errorf("m3 data keys still sealed (%v)", err)
		}
		return nil
	})
	m3.restart()
	if s := m3.status(); s.State != "ready" {
		t.Fatalf("after autolock off a restarted manager is %q, want ready", s.State)
	}
}

// checkNothingOpensAtRest: with d stopped, no file of its data dir holds
// its data key or its TLS private key in any common encoding, the data key
// it had before autolock opens nothing of its raft state, and the real
// keys (from the unlock key) do — so the check is not vacuous.
func checkNothingOpensAtRest(t testing.TB, d *daemon, unlockKey string, before encryption.DataKeys) {
	t.Helper()
	kek, _ := encryption.ParseUnlockKey(unlockKey)
	keys, err := encryption.ReadKeyFile(d.dekPath(), &kek)
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := keys.Sealer()
	sealedTLS, err := os.ReadFile(d.tlsKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	tlsPEM, err := encryption.OpenPrivateKey(sealedTLS, sealer)
	if err != nil {
		t.Fatalf("TLS key does not open with the data key: %v", err)
	}
	block, _ := pem.Decode(tlsPEM)
	if block == nil {
		t.Fatal("opened TLS key is not PEM")
	}
	secrets := map[string][]byte{"data key": keys.Current[:], "TLS private key": block.Bytes}
	err = filepath.WalkDir(d.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for what, s := range secrets {
			for _, form := range [][]byte{s, []byte(hex.EncodeToString(s)), []byte(base64.StdEncoding.EncodeToString(s))} {
				if bytes.Contains(b, form) {
					t.Errorf("%s holds the %s", path, what)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	oldSealer, _ := before.Sealer()
	if _, _, err := storage.Open(d.raftStateDir(), oldSealer, storage.Options{}); !errors.Is(err, encryption.ErrOpen) {
		t.Errorf("the data key from before autolock opens the raft state (err %v), want ErrOpen", err)
	}
	s, _, err := storage.Open(d.raftStateDir(), sealer, storage.Options{})
	if err != nil {
		t.Fatalf("the current data key does not open the raft state: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// dirDigest sums every regular file of dir but the lock and the socket.
func dirDigest(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() || path == datadir.Dir(dir).Lock() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %x\n", path, sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestRestoreKeepsAutolock: a backup of a cluster with autolock on
// restores with autolock on and the same unlock key: the restored manager
// seals its fresh keys with it, and after a restart it is locked until
// given that key.
func TestRestoreKeepsAutolock(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m")
	m.initQuiet()
	key := strings.TrimSpace(wantOK(t, m.jaco("cluster", "update", "--autolock=true", "--quiet")).stdout)
	waitKeysSealed(t, m.name, m.dir, key)
	wantOK(t, m.jaco("node", "update", "--label-add", "kept=yes", "m"))
	file := filepath.Join(t.TempDir(), "cluster.backup")
	backupKey := strings.TrimSpace(wantOK(t, m.jaco("backup", "-o", file, "--quiet")).stdout)
	m.stop()

	dir := filepath.Join(t.TempDir(), "restored")
	wantOK(t, runStdin(backupKey+"\n", "restore", file, "--data-dir", dir, "--node-name", "m", "--advertise-addr", m.addr))
	r := startDaemonAt(t, "m", dir, m.addr)
	if s := r.status(); s.State != "ready" {
		t.Fatalf("restored manager is %q at its first start, want ready (restore writes its keys in clear)", s.State)
	}
	waitKeysSealed(t, r.name, r.dir, key)
	if got := strings.TrimSpace(wantOK(t, r.jaco("cluster", "unlock-key", "--quiet")).stdout); got != key {
		t.Fatalf("restored cluster shows unlock key %q, want the backed-up %q", got, key)
	}
	r.restart()
	wantError(t, r.jaco("node", "ls"), 1, "locked")
	wantOK(t, r.unlock(key))
	eventually(t, 30*time.Second, func() error {
		out := r.jaco("node", "ls", "--format", "json")
		if err := out.err(); err != nil {
			return err
		}
		if !strings.Contains(out.stdout, `"kept": "yes"`) {
			return fmt.Errorf("label missing after restore and unlock: %s", out.stdout)
		}
		return nil
	})
}

// TestForceNewClusterWhileLocked: a manager restarted with
// --force-new-cluster while autolock is on waits, locked, for its key, and
// the force runs once it is given: it then leads alone with its state.
func TestForceNewClusterWhileLocked(t *testing.T) {
	t.Parallel()
	ds := formManagers(t, 3)
	key := strings.TrimSpace(wantOK(t, ds[0].jaco("cluster", "update", "--autolock=true", "--quiet")).stdout)
	for _, d := range ds {
		waitKeysSealed(t, d.name, d.dir, key)
	}
	wantOK(t, ds[0].jaco("node", "update", "--label-add", "kept=yes", "m1"))
	survivor, rest := splitLeader(t, ds)
	for _, d := range rest {
		d.kill() // lost for good
	}
	survivor.stop()

	survivor.flags = append(survivor.flags, "--force-new-cluster")
	survivor.start()
	if s := survivor.status(); s.State != "locked" {
		t.Fatalf("forced start with sealed keys: state %q, want locked", s.State)
	}
	if strings.Contains(survivor.log(), "sole voter of a new cluster") {
		t.Fatal("the force ran before the unlock")
	}
	wantOK(t, survivor.unlock(key))
	if !strings.Contains(survivor.log(), "sole voter of a new cluster") {
		t.Fatal("the unlock did not run the force")
	}
	waitVoters(t, survivor, 1, 1)
	out := wantOK(t, survivor.jaco("node", "ls", "--format", "json")).stdout
	if !strings.Contains(out, `"kept": "yes"`) {
		t.Fatalf("state lost by the forced start: %s", out)
	}
	wantOK(t, survivor.jaco("node", "update", "--label-add", "after=force", survivor.name))
}
