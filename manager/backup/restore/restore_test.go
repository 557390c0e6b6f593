package restore

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/nodename"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/backup/internal/backuptest"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

var restoreOpts = Options{NodeName: "mgr-1", AdvertiseAddr: "127.0.0.1:5555"}

// startRestored opens the restored raft state as jacod would and waits
// until the member leads.
func startRestored(t *testing.T, dataDir string) (*raft.Node, *store.Store) {
	t.Helper()
	keys, err := encryption.ReadKeyFile(datadir.Dir(dataDir).DataKeys(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := keys.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(nil)
	n, err := raft.New(raft.Config{StateDir: datadir.Dir(dataDir).Raft(), Sealer: sealer, Applier: st,
		Logger: slog.New(slog.DiscardHandler), TickInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("open restored raft state: %v", err)
	}
	n.Start()
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.WaitForLeader(ctx); err != nil || !n.IsLeader() {
		t.Fatalf("restored member does not lead: %v (status %+v)", err, n.Status())
	}
	return n, st
}

func TestRestoreStartsASoleManagerWithTheBackedUpState(t *testing.T) {
	b := backuptest.Backup(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	if _, err := Restore(b, restoreOpts); err == nil {
		t.Fatal("Restore without a data dir succeeded")
	}
	opts := restoreOpts
	opts.DataDir = dataDir
	res, err := Restore(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.NodeID != "node-a" || res.RaftID == 0 || res.RaftID == 5 || res.RaftID == 3 {
		t.Errorf("restored as %+v; want node-a under a fresh raft id", res)
	}
	if !slices.Equal(res.Blacklisted, []uint64{3, 5}) {
		t.Errorf("blacklisted %v, want [3 5]", res.Blacklisted)
	}

	n, st := startRestored(t, dataDir)
	if term := n.Term(); term <= b.Term {
		t.Errorf("term %d after start, want above the backup's %d", term, b.Term)
	}
	if got := n.Members(); len(got) != 1 || got[0].RaftId != res.RaftID || got[0].Address != opts.AdvertiseAddr {
		t.Errorf("members %v, want only this node", got)
	}
	for _, id := range []uint64{3, 5} {
		if !n.IsRemoved(id) {
			t.Errorf("old raft id %d not blacklisted", id)
		}
	}
	if n.IsRemovedNode("node-a") {
		t.Error("this node's id counts as removed")
	}

	got := st.Save()
	want := proto.Clone(b.Snapshot.Store).(*api.StoreSnapshot)
	self := got.Nodes[0]
	if self.Id != "node-a" || self.RaftId != res.RaftID || self.Address != opts.AdvertiseAddr || self.Role != api.NodeRole_NODE_ROLE_MANAGER {
		t.Errorf("this node = %v", self)
	}
	// Everything else is as backed up.
	got.Nodes[0], want.Nodes[0] = nil, nil
	if !proto.Equal(got, want) {
		t.Errorf("restored store differs:\n got %v\nwant %v", got, want)
	}
	if self.Labels["zone"] != "a" {
		t.Errorf("this node lost its labels: %v", self.Labels)
	}

	// The node certificate is this node's, signed by the backed-up CA.
	caPEM, certPEM, _, err := ca.LoadNodeFiles(datadir.Dir(dataDir).Node())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	blk, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("node certificate does not chain to the cluster CA: %v", err)
	}
	if cert.Subject.CommonName != "node-a" {
		t.Errorf("certificate for %q, want node-a", cert.Subject.CommonName)
	}
}

func TestRestoreAddsANodeWhenTheNameIsNew(t *testing.T) {
	opts := restoreOpts
	opts.DataDir, opts.NodeName = t.TempDir(), "fresh-host"
	res, err := Restore(backuptest.Backup(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, st := startRestored(t, opts.DataDir)
	var self *api.Node
	st.View(func(tx store.ReadTx) { self = tx.GetNode(res.NodeID) })
	if self == nil || self.Hostname != "fresh-host" || self.RaftId != res.RaftID || self.Role != api.NodeRole_NODE_ROLE_MANAGER {
		t.Fatalf("new node = %v", self)
	}
	if n := len(st.Save().Nodes); n != 3 {
		t.Errorf("%d nodes, want the 2 backed up and this one", n)
	}
}

func TestRestoreRefusesAndWritesNothing(t *testing.T) {
	t.Run("non-empty data dir", func(t *testing.T) {
		opts := restoreOpts
		opts.DataDir = t.TempDir()
		if err := os.WriteFile(filepath.Join(opts.DataDir, "keep"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Restore(backuptest.Backup(t), opts)
		if !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("Restore = %v, want ErrNotEmpty", err)
		}
		assertEntries(t, opts.DataDir, "keep")
	})
	t.Run("a node name that is not a host name", func(t *testing.T) {
		opts := restoreOpts
		opts.DataDir, opts.NodeName = t.TempDir(), "mgr\x1b[2J\n1"
		if _, err := Restore(backuptest.Backup(t), opts); !errors.Is(err, nodename.ErrInvalid) {
			t.Fatalf("Restore = %v, want nodename.ErrInvalid", err)
		}
		assertEntries(t, opts.DataDir)
	})
	t.Run("unusable CA", func(t *testing.T) {
		b := backuptest.Backup(t)
		b.Snapshot.Store.Clusters[0].CaKeyPem = []byte("not a key")
		opts := restoreOpts
		opts.DataDir = t.TempDir()
		if _, err := Restore(b, opts); err == nil {
			t.Fatal("Restore with a broken CA key succeeded")
		}
		assertEntries(t, opts.DataDir)
	})
	t.Run("failure while writing", func(t *testing.T) {
		opts := restoreOpts
		opts.DataDir = filepath.Join(t.TempDir(), "data")
		// A file where the raft state goes appears after the emptiness
		// check: simulate by restoring a backup whose term is zero, which
		// WriteRestored refuses after the node files are written.
		b := backuptest.Backup(t)
		b.Term = 0
		if _, err := Restore(b, opts); err == nil {
			t.Fatal("Restore with term 0 succeeded")
		}
		if _, err := os.Stat(opts.DataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("data dir created by a failed restore left behind: %v", err)
		}
	})
}

func assertEntries(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
}
