package raft

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

type harness struct {
	t      testing.TB
	dir    string
	key    encryption.Key
	sealer *encryption.Sealer
	self   *api.RaftMember
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	key, err := encryption.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := encryption.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewRaftID()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: filepath.Join(t.TempDir(), "raft"), key: key, sealer: sealer,
		self: &api.RaftMember{RaftId: id, NodeId: "node-a", Address: "127.0.0.1:7000"}}
	if err := Bootstrap(h.dir, sealer, "cluster-1", h.self, &api.InternalRaftRequest{Actions: rafttest.Put("init", "cluster-init")}); err != nil {
		t.Fatal(err)
	}
	return h
}

// start opens and starts a member on the harness dir and waits until it leads.
func (h *harness) start(kv *rafttest.KV, snapshotInterval uint64) *Node {
	h.t.Helper()
	return h.startConfig(Config{Applier: kv, SnapshotInterval: snapshotInterval, LogEntriesForSlowFollowers: 2})
}

// startConfig is start with cfg's applier, transport and snapshot
// settings; the harness sets the directory, sealer, logger and clock.
func (h *harness) startConfig(cfg Config) *Node {
	h.t.Helper()
	cfg.StateDir, cfg.Sealer = h.dir, h.sealer
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.TickInterval = 10 * time.Millisecond
	n, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	n.Start()
	h.t.Cleanup(func() { n.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lead, err := n.WaitForLeader(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if lead != h.self.RaftId {
		h.t.Fatalf("leader %x, want self %x", lead, h.self.RaftId)
	}
	return n
}

func propose(t *testing.T, n *Node, k, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Propose(ctx, rafttest.Put(k, v)); err != nil {
		t.Fatalf("propose %s: %v", k, err)
	}
}

// barrier waits until everything committed before it is applied.
func barrier(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Barrier(ctx); err != nil {
		t.Fatalf("barrier: %v", err)
	}
}

func TestBootstrapElectsAndAppliesInit(t *testing.T) {
	h := newHarness(t)
	kv := rafttest.NewKV()
	n := h.start(kv, 0)
	if v, ok := kv.Get("init"); !ok || v != "cluster-init" {
		t.Fatalf("init entry not applied: %q %v", v, ok)
	}
	if !n.IsVoter(h.self.RaftId) {
		t.Fatal("bootstrapped member is not a voter")
	}
	if addr, ok := n.ResolveAddress(h.self.RaftId); !ok || addr != h.self.Address {
		t.Fatalf("ResolveAddress = %q %v", addr, ok)
	}
	if n.NodeID() != "node-a" || n.ClusterID() != "cluster-1" {
		t.Fatalf("metadata: node %q cluster %q", n.NodeID(), n.ClusterID())
	}
}

func TestProposeReturnsStoreVerdict(t *testing.T) {
	h := newHarness(t)
	kv := rafttest.NewKV()
	n := h.start(kv, 0)
	propose(t, n, "a", "1")
	if v, _ := kv.Get("a"); v != "1" {
		t.Fatalf("a = %q after Propose returned", v)
	}
	err := n.Propose(context.Background(), rafttest.Put("b", rafttest.Rejected))
	if err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("Propose of a rejected batch: err = %v", err)
	}
	if _, ok := kv.Get("b"); ok {
		t.Fatal("rejected batch was applied")
	}
}

func TestRestartRebuildsFromSnapshotAndWAL(t *testing.T) {
	h := newHarness(t)
	kv := rafttest.NewKV()
	n := h.start(kv, 5)
	for i := range 23 {
		propose(t, n, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(h.dir, "snap", "*.snap"))
	if len(snaps) != 1 {
		t.Fatalf("snapshot files = %v, want exactly the newest one", snaps)
	}
	kv2 := rafttest.NewKV()
	h.start(kv2, 5)
	if kv2.Len() != 24 {
		t.Fatalf("restarted store has %d keys, want 24", kv2.Len())
	}
	for i := range 23 {
		if v, _ := kv2.Get(fmt.Sprintf("k%02d", i)); v != fmt.Sprint(i) {
			t.Fatalf("k%02d = %q after restart", i, v)
		}
	}
}

func TestNothingInClearOnDisk(t *testing.T) {
	h := newHarness(t)
	kv := rafttest.NewKV()
	n := h.start(kv, 4)
	secret := "s3cr3t-marker-7f1c2b"
	for i := range 10 {
		propose(t, n, fmt.Sprintf("secret-%d", i), secret)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	var files int
	err := filepath.WalkDir(h.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, needle := range []string{secret, "secret-1", "cluster-init"} {
			if bytes.Contains(b, []byte(needle)) {
				t.Errorf("%s holds %q in clear", path, needle)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 {
		t.Fatalf("walked %d files; expected wal and snap files", files)
	}
	// And the sealed state opens again with the key.
	kv2 := rafttest.NewKV()
	h.start(kv2, 4)
	if v, _ := kv2.Get("secret-9"); v != secret {
		t.Fatalf("secret-9 = %q after restart", v)
	}
}

func lastWAL(t *testing.T, dir string) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatal("no wal segment")
	}
	slices.Sort(segs)
	return segs[len(segs)-1]
}

// walFrames returns the records of a wal segment as [start, end) offsets
// of their bytes (frame header and padding excluded).
func walFrames(t *testing.T, b []byte) [][2]int {
	t.Helper()
	var recs [][2]int
	for off := 0; off+8 <= len(b); {
		l := binary.LittleEndian.Uint64(b[off:])
		if l == 0 {
			break
		}
		// etcd's frame: low 56 bits length, top bit "padded", bits 56-58 pad.
		recBytes := l &^ (uint64(0xff) << 56)
		var pad uint64
		if l&(1<<63) != 0 {
			pad = (l >> 56) & 0x7
		}
		recs = append(recs, [2]int{off + 8, off + 8 + int(recBytes)})
		off += 8 + int(recBytes+pad)
	}
	return recs
}

// writeAndStop commits k0..k<n-1> on a fresh member, stops it, and returns
// its last WAL segment: path, bytes and records.
func writeAndStop(t *testing.T, h *harness, count int) (string, []byte, [][2]int) {
	t.Helper()
	n := h.start(rafttest.NewKV(), 0)
	for i := range count {
		propose(t, n, fmt.Sprintf("k%d", i), "v")
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	path := lastWAL(t, h.dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b, walFrames(t, b)
}

func TestTornTailIsRepaired(t *testing.T) {
	h := newHarness(t)
	path, _, recs := writeAndStop(t, h, 5)
	// A crash in the middle of writing the last record: it is cut short.
	if err := os.Truncate(path, int64(recs[len(recs)-1][1]-3)); err != nil {
		t.Fatal(err)
	}
	kv2 := rafttest.NewKV()
	n2 := h.start(kv2, 0)
	barrier(t, n2)
	for i := range 5 {
		if _, ok := kv2.Get(fmt.Sprintf("k%d", i)); !ok {
			t.Fatalf("acknowledged write k%d lost after torn-tail repair", i)
		}
	}
}

func TestCorruptionInTheMiddleStopsWithFileName(t *testing.T) {
	h := newHarness(t)
	path, b, recs := writeAndStop(t, h, 5)
	if len(recs) < 8 {
		t.Fatalf("only %d records in the wal", len(recs))
	}
	// Flip the last byte of the fourth record (inside its data), leaving
	// later records intact: that is corruption, not a torn write.
	b[recs[3][1]-1] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{StateDir: h.dir, Sealer: h.sealer, Applier: rafttest.NewKV(), Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("opened a wal corrupted in the middle")
	}
	if !strings.Contains(err.Error(), filepath.Base(path)) {
		t.Fatalf("error does not name the damaged file %s: %v", filepath.Base(path), err)
	}
}

func TestProposeOnStoppedNode(t *testing.T) {
	h := newHarness(t)
	n := h.start(rafttest.NewKV(), 0)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := n.Propose(context.Background(), rafttest.Put("x", "y")); !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrStopped) {
		t.Fatalf("Propose after Stop: %v", err)
	}
}
