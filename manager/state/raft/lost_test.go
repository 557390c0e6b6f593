package raft

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// A follower whose log lost entries it had acknowledged (here: a leader
// counting on index 5 of a log that ends at 4) is what raft panics on
// ("tocommit(5) is out of range [lastIndex(4)]"). The member stops
// instead, with an error naming the log, both indexes and the runbook,
// and every later start refuses at once.
func TestLeaderCountingOnLostEntriesStopsTheMember(t *testing.T) {
	h := newHarness(t) // for its sealer
	dir := filepath.Join(t.TempDir(), "raft")
	members := []*api.RaftMember{
		{RaftId: 10, NodeId: "n0", Address: "10.0.0.1:7000"},
		{RaftId: 11, NodeId: "n1", Address: "10.0.0.2:7000"},
		{RaftId: 12, NodeId: "n2", Address: "10.0.0.3:7000"},
	}
	// Entries 1..4 (three members and the first batch), committed.
	if err := BootstrapStatic(dir, h.sealer, "cluster-s", members[1], members, &api.InternalRaftRequest{Actions: rafttest.Put("init", "static")}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{StateDir: dir, Sealer: h.sealer, Applier: rafttest.NewKV(), Logger: slog.New(slog.DiscardHandler), TickInterval: time.Hour}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(func() { n.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A leader of term 2 that counts on what the log holds is followed.
	if err := n.Step(ctx, raftpb.Message{Type: raftpb.MsgHeartbeat, From: 10, To: 11, Term: 2, Commit: 4}); err != nil {
		t.Fatal(err)
	}
	if lead, err := n.WaitForLeader(ctx); err != nil || lead != 10 {
		t.Fatalf("leader %x (%v), want 10", lead, err)
	}

	// Another member, or a leader of a newer term, claiming as much is
	// not believed: refused, and the member goes on following 10.
	for _, m := range []raftpb.Message{
		{Type: raftpb.MsgHeartbeat, From: 12, To: 11, Term: 2, Commit: 99},
		{Type: raftpb.MsgHeartbeat, From: 12, To: 11, Term: 3, Commit: 99},
		{Type: raftpb.MsgHeartbeat, From: 10, To: 11, Term: 3, Commit: 99},
	} {
		if err := n.Step(ctx, m); !errors.Is(err, errCommitPastLog) {
			t.Fatalf("heartbeat %v past the log: %v, want errCommitPastLog", m, err)
		}
	}
	if st := n.Status(); st.Term != 2 || st.Lead != 10 || n.Err() != nil {
		t.Fatalf("after refused heartbeats: term %d lead %x err %v, want term 2 following 10 and running", st.Term, st.Lead, n.Err())
	}

	err = n.Step(ctx, raftpb.Message{Type: raftpb.MsgHeartbeat, From: 10, To: 11, Term: 2, Commit: 5})
	if !errors.Is(err, storage.ErrLostAcknowledged) {
		t.Fatalf("heartbeat past the log: %v, want ErrLostAcknowledged", err)
	}
	select {
	case <-n.Done():
	case <-ctx.Done():
		t.Fatal("the member still runs after its leader counted on entries it lost")
	}
	wantLostEntries(t, n.Err(), filepath.Join(dir, "wal"), "ends at index 4", "holding index 5", "jaco node remove --force n1")

	// The marker makes the refusal stick, before the log is touched.
	if _, err := os.Stat(filepath.Join(dir, LostEntriesMarker)); err != nil {
		t.Fatalf("no %s marker: %v", LostEntriesMarker, err)
	}
	_, err = New(cfg)
	wantLostEntries(t, err, LostEntriesMarker, "holding index 5", "jaco node remove --force n1")
}

func wantLostEntries(t *testing.T, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, storage.ErrLostAcknowledged) {
		t.Fatalf("error %v, want ErrLostAcknowledged", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
