// Package raftstoretest opens a store behind a real raft member for tests
// and benchmarks that measure writes through consensus: a lone member with
// its sealed, fsync'ed WAL in a temporary directory.
package raftstoretest

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Bootstrap creates the raft state of a one-member cluster whose first
// entry is first, under tb.TempDir(), sealed with a new data key. It
// returns the raft directory and its sealer.
func Bootstrap(tb testing.TB, first *api.InternalRaftRequest) (dir string, sealer *encryption.Sealer) {
	tb.Helper()
	key, err := encryption.NewKey()
	if err != nil {
		tb.Fatal(err)
	}
	sealer, err = encryption.NewSealer(key)
	if err != nil {
		tb.Fatal(err)
	}
	raftID, err := raft.NewRaftID()
	if err != nil {
		tb.Fatal(err)
	}
	dir = filepath.Join(tb.TempDir(), "raft")
	self := &api.RaftMember{RaftId: raftID, NodeId: "bench-manager", Address: "127.0.0.1:0"}
	if err := raft.Bootstrap(dir, sealer, "bench-cluster", self, first); err != nil {
		tb.Fatal(err)
	}
	return dir, sealer
}

// Open bootstraps a one-member raft group under tb.TempDir(), opens it
// with a store as its applier, and waits until it leads. The function it
// returns (also called at cleanup) stops both.
func Open(tb testing.TB) (*store.Store, func()) {
	tb.Helper()
	dir, sealer := Bootstrap(tb, &api.InternalRaftRequest{})
	st := store.New(nil)
	n, err := raft.New(raft.Config{
		StateDir: dir, Sealer: sealer, Applier: st,
		Logger:       slog.New(slog.DiscardHandler),
		TickInterval: 10 * time.Millisecond,
	})
	if err != nil {
		tb.Fatal(err)
	}
	st.SetProposer(n)
	n.Start()
	var once sync.Once
	closeStore := func() {
		once.Do(func() {
			if err := n.Stop(); err != nil {
				tb.Errorf("stop raft: %v", err)
			}
			st.Close()
			// testing keeps cleanup funcs reachable after they ran; drop
			// the references so a closed store's memory does not count in
			// the next run's heap.
			n, st = nil, nil
		})
	}
	tb.Cleanup(closeStore)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.WaitForLeader(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := n.Barrier(ctx); err != nil {
		tb.Fatal(err)
	}
	return st, closeStore
}

// HeapInuse is the heap in use after a GC, as the benchmarks over such a
// store report it.
func HeapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
