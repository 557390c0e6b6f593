package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// fuzzMember is a leading single member the fuzz steps messages into. A
// message may stop it by design (a leader counting on entries it lacks:
// ErrLostAcknowledged), so the fuzz starts another in a fresh directory
// under root when that happens.
type fuzzMember struct {
	root string
	n    int
	node *Node
}

func (m *fuzzMember) start() error {
	m.n++
	dir := filepath.Join(m.root, fmt.Sprintf("raft-%d", m.n))
	key, err := encryption.NewKey()
	if err != nil {
		return err
	}
	sealer, err := encryption.NewSealer(key)
	if err != nil {
		return err
	}
	self := &api.RaftMember{RaftId: 1, NodeId: "node-a", Address: "127.0.0.1:7000"}
	if err := Bootstrap(dir, sealer, "cluster-1", self, &api.InternalRaftRequest{Actions: rafttest.Put("init", "x")}); err != nil {
		return err
	}
	n, err := New(Config{
		StateDir: dir, Sealer: sealer, Applier: rafttest.NewKV(), Transport: &sentMessages{},
		Logger: slog.New(slog.DiscardHandler), TickInterval: 10 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	n.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.WaitForLeader(ctx); err != nil {
		n.Stop()
		return err
	}
	m.node = n
	return nil
}

// FuzzStepEncoded: a raft message batch from a peer, as the transport
// receives it, is refused with an error or stepped; it never crashes the
// member (a panic in the raft library takes the whole daemon down) and
// never stops it for any reason but the designed one.
func FuzzStepEncoded(f *testing.F) {
	m := &fuzzMember{root: f.TempDir()}
	if err := m.start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { m.node.Stop() })
	for _, msg := range []raftpb.Message{
		{Type: raftpb.MsgHeartbeatResp, From: 2, To: 1, Term: 1},
		{Type: raftpb.MsgApp, From: 2, To: 1, Term: 5, Index: 1, LogTerm: 1, Commit: 1,
			Entries: []raftpb.Entry{{Index: 2, Term: 5, Data: []byte("x")}}},
		{Type: raftpb.MsgHeartbeat, From: 2, To: 1, Term: 5, Commit: 1},
		{Type: raftpb.MsgVote, From: 2, To: 1, Term: 9, Index: 9, LogTerm: 9},
		{Type: raftpb.MsgSnap, From: 2, To: 1, Term: 9, Snapshot: &raftpb.Snapshot{Data: []byte("not a snapshot"),
			Metadata: raftpb.SnapshotMetadata{Index: 50, Term: 9, ConfState: raftpb.ConfState{Voters: []uint64{1, 2}}}}},
	} {
		b, err := msg.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		select {
		case <-m.node.Done():
			// The member's own loop may stop it after the run that
			// stepped the message; the input is lost then, not the
			// finding.
			if err := m.node.Err(); err != nil && !errors.Is(err, storage.ErrLostAcknowledged) {
				t.Fatalf("the member stopped after an earlier input: %v", err)
			}
			if err := m.start(); err != nil {
				t.Fatal(err)
			}
		default:
		}
		svc := NewService(m.node)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = svc.stepEncoded(ctx, data)
		// raft handles a stepped message on its own goroutine; a status
		// query is served after it, so a panic there happens in this run.
		_ = m.node.rn.Status()
		select {
		case <-m.node.Done():
			if err := m.node.Err(); err != nil && !errors.Is(err, storage.ErrLostAcknowledged) {
				t.Fatalf("the member stopped: %v", err)
			}
		default:
		}
	})
}
