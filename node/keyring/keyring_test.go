package keyring

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/overlay"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/encryption"
)

// fakeDaemon runs whatever fakeManager the test sets.
type fakeDaemon struct {
	changes sync.Mutex // the daemon's lock on what it runs
	mu      sync.Mutex
	m       Manager
}

func (d *fakeDaemon) LockChanges() (func(), error) {
	d.changes.Lock()
	return d.changes.Unlock, nil
}

func (d *fakeDaemon) Manager() Manager {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m
}

func (d *fakeDaemon) run(m Manager) {
	d.mu.Lock()
	d.m = m
	d.mu.Unlock()
}

// fakeManager holds a cluster object and records the sealers it was
// rekeyed with.
type fakeManager struct {
	changed chan struct{}
	mu      sync.Mutex
	cluster *api.Cluster
	rekeyed []*encryption.Sealer
}

func newFakeManager(c *api.Cluster) *fakeManager {
	return &fakeManager{changed: make(chan struct{}), cluster: c}
}

func (m *fakeManager) Cluster() *api.Cluster {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cluster
}

func (m *fakeManager) ClusterChanged(context.Context) <-chan struct{} { return m.changed }

func (m *fakeManager) Rekey(_ context.Context, s *encryption.Sealer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rekeyed = append(m.rekeyed, s)
	return nil
}

// setCluster changes the cluster object and tells the loop, as a write
// to the store does.
func (m *fakeManager) setCluster(c *api.Cluster) {
	m.mu.Lock()
	m.cluster = c
	m.mu.Unlock()
	m.changed <- struct{}{}
}

func (m *fakeManager) rekeys() []*encryption.Sealer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*encryption.Sealer(nil), m.rekeyed...)
}

// managerFiles writes what a manager's data dir holds in clear: its
// node files, its data key and an overlay key. It returns the TLS key.
func managerFiles(t *testing.T, k *Keyring) (keyPEM []byte) {
	t.Helper()
	caPEM, caKeyPEM, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ca.NewSigner(caPEM, caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := signer.Issue("node-1", ca.RoleManager, "cluster-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.SaveNodeFiles(caPEM, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	if _, err := k.NewDataKey(); err != nil {
		t.Fatal(err)
	}
	wg, err := overlay.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := overlay.SaveKey(k.dir.OverlayKey(), wg, nil); err != nil {
		t.Fatal(err)
	}
	return keyPEM
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAutolockSealsRotatesAndOpens: with autolock turned on, the loop
// seals the data keys with the unlock key after rotating the data key
// and rewriting the raft state under the new one, and seals the TLS and
// overlay keys with the data keys; turned off, it writes them all in
// clear again (docs/adr/0012). Run returns when its context ends.
func TestAutolockSealsRotatesAndOpens(t *testing.T) {
	d := &fakeDaemon{}
	dir := datadir.Dir(t.TempDir())
	k := New(Config{Dir: dir, Daemon: d, CheckInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	keyPEM := managerFiles(t, k)
	before, err := encryption.ReadKeyFile(dir.DataKeys(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	m := newFakeManager(&api.Cluster{})
	d.run(m)
	k.ManagerStarted()
	waitFor(t, "settled with autolock off", k.Settled)
	if k.UnlockKey() != nil || len(m.rekeys()) != 0 {
		t.Fatalf("autolock off: unlock key %v, %d rekeys, want none", k.UnlockKey() != nil, len(m.rekeys()))
	}

	kek, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	m.setCluster(&api.Cluster{Autolock: true, UnlockKey: kek[:]})
	waitFor(t, "settled under the unlock key", func() bool {
		key := k.UnlockKey() // before Settled: see its doc
		return key != nil && *key == kek && k.Settled()
	})
	if sealed, err := k.DataKeysSealed(); err != nil || !sealed {
		t.Fatalf("data keys sealed %v (%v), want sealed", sealed, err)
	}
	after, err := encryption.ReadKeyFile(dir.DataKeys(), &kek)
	if err != nil {
		t.Fatal(err)
	}
	if after.Current == before.Current || len(after.Previous) != 0 {
		t.Fatalf("data keys after autolock: rotated %v, %d previous; want a new key alone", after.Current != before.Current, len(after.Previous))
	}
	rekeys := m.rekeys()
	if len(rekeys) != 1 {
		t.Fatalf("%d rekeys, want 1", len(rekeys))
	}
	newOnly, err := encryption.NewSealer(after.Current)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newOnly.Open(rekeys[0].Seal([]byte("entry"), nil), nil); err != nil {
		t.Fatalf("the raft state was rewritten under another key than the new data key: %v", err)
	}
	_, _, rawKey, err := ca.LoadNodeFiles(dir.Node())
	if err != nil {
		t.Fatal(err)
	}
	if !encryption.PrivateKeySealed(rawKey) {
		t.Fatal("TLS key in clear under autolock")
	}
	if _, err := overlay.LoadKey(dir.OverlayKey(), nil); !errors.Is(err, overlay.ErrKeyLocked) {
		t.Fatalf("overlay key opened without a sealer under autolock: %v", err)
	}
	if _, _, got, err := k.LoadNodeFiles(); err != nil || !bytes.Equal(got, keyPEM) {
		t.Fatalf("TLS key opened: %v, same as before %v", err, bytes.Equal(got, keyPEM))
	}

	m.setCluster(&api.Cluster{})
	waitFor(t, "settled in clear", func() bool { return k.UnlockKey() == nil && k.Settled() })
	if sealed, err := k.DataKeysSealed(); err != nil || sealed {
		t.Fatalf("data keys sealed %v (%v) after autolock off, want in clear", sealed, err)
	}
	if _, _, rawKey, err = ca.LoadNodeFiles(dir.Node()); err != nil || !bytes.Equal(rawKey, keyPEM) {
		t.Fatalf("TLS key after autolock off: %v, in clear as before %v", err, bytes.Equal(rawKey, keyPEM))
	}
	if _, err := overlay.LoadKey(dir.OverlayKey(), nil); err != nil {
		t.Fatalf("overlay key after autolock off: %v", err)
	}
	if len(m.rekeys()) != 1 {
		t.Fatalf("%d rekeys after autolock off, want still 1 (turning it off rotates nothing)", len(m.rekeys()))
	}
}

// lockedFiles writes data keys sealed with a fresh unlock key, as a
// manager restarted under autolock finds them, and returns that key.
func lockedFiles(t *testing.T, dir datadir.Dir) encryption.Key {
	t.Helper()
	if err := os.MkdirAll(dir.Node(), 0o700); err != nil {
		t.Fatal(err)
	}
	dek, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	kek, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := encryption.WriteKeyFile(dir.DataKeys(), encryption.DataKeys{Current: dek}, &kek); err != nil {
		t.Fatal(err)
	}
	return kek
}

// TestUnlockHoldsOnlyTheKeyThatOpens: a malformed key and a wrong key are
// refused with their reasons and counted, and leave the keyring locked;
// the right one opens the data keys until it is forgotten.
func TestUnlockHoldsOnlyTheKeyThatOpens(t *testing.T) {
	dir := datadir.Dir(t.TempDir())
	kek := lockedFiles(t, dir)
	k := New(Config{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if sealed, err := k.DataKeysSealed(); err != nil || !sealed {
		t.Fatalf("data keys sealed %v (%v), want sealed", sealed, err)
	}
	wrong, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, reason string }{
		{"not a key", reason.InvalidSpec},
		{encryption.FormatUnlockKey(wrong), reason.PermissionDenied},
	} {
		if got := reason.Of(k.Unlock(tc.key)); got != tc.reason {
			t.Fatalf("Unlock(%q): reason %q, want %q", tc.key, got, tc.reason)
		}
		if k.UnlockKey() != nil {
			t.Fatalf("Unlock(%q) refused, but a key is held", tc.key)
		}
	}
	if got := k.FailedUnlocks(); got != 2 {
		t.Fatalf("failed unlocks %d, want 2", got)
	}
	if _, err := k.DataSealer(); !errors.Is(err, encryption.ErrLocked) {
		t.Fatalf("data keys opened while locked: %v", err)
	}
	if err := k.Unlock(encryption.FormatUnlockKey(kek)); err != nil {
		t.Fatal(err)
	}
	if k.UnlockKey() == nil || *k.UnlockKey() != kek {
		t.Fatal("the right key is not held after Unlock")
	}
	if _, err := k.DataSealer(); err != nil {
		t.Fatalf("data keys after Unlock: %v", err)
	}
	k.ForgetUnlockKey()
	if _, err := k.DataSealer(); !errors.Is(err, encryption.ErrLocked) {
		t.Fatalf("data keys opened after ForgetUnlockKey: %v", err)
	}
}

// TestUnlockRateLimitedLooksAtNoKey: past FreeUnlockAttempts wrong keys,
// the right key is refused rate_limited too, and the refusal is not
// counted (docs/adr/0023).
func TestUnlockRateLimitedLooksAtNoKey(t *testing.T) {
	dir := datadir.Dir(t.TempDir())
	kek := lockedFiles(t, dir)
	k := New(Config{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	for range FreeUnlockAttempts {
		if got := reason.Of(k.Unlock("not a key")); got != reason.InvalidSpec {
			t.Fatalf("malformed key: reason %q, want invalid_spec", got)
		}
	}
	if got := reason.Of(k.Unlock(encryption.FormatUnlockKey(kek))); got != reason.RateLimited {
		t.Fatalf("right key during the delay: reason %q, want rate_limited", got)
	}
	if k.UnlockKey() != nil || k.FailedUnlocks() != FreeUnlockAttempts {
		t.Fatalf("after a refusal for the delay: key held %v, %d failed; want none held, %d failed",
			k.UnlockKey() != nil, k.FailedUnlocks(), FreeUnlockAttempts)
	}
}
