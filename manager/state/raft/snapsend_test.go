package raft

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// TestSnapshotDataStaysOnDisk: once a snapshot is taken, raft's memory
// storage holds its metadata and not its data; a MsgSnap raft emits
// without data leaves the Ready loop's batch and reaches the transport
// on its own, filled with the snapshot file's data, from which a member
// rebuilds the state; the other messages go on in their order.
func TestSnapshotDataStaysOnDisk(t *testing.T) {
	sent := &sentMessages{}
	n := newHarness(t).startConfig(Config{Applier: rafttest.NewKV(), Transport: sent, SnapshotInterval: 5, LogEntriesForSlowFollowers: 2})
	for i := range 12 {
		propose(t, n, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	var (
		snap raftpb.Snapshot
		err  error
	)
	waitfor.Eventually(t, 10*time.Second, func() error {
		if snap, err = n.mem.Snapshot(); err != nil || snap.Metadata.Index == 0 {
			return errors.Join(errors.New("no snapshot taken yet"), err)
		}
		return nil
	})
	if len(snap.Data) != 0 {
		t.Fatalf("raft's memory storage holds %d bytes of snapshot data", len(snap.Data))
	}

	const follower = 0x7
	msgs := []raftpb.Message{
		{Type: raftpb.MsgHeartbeat, To: 0x8},
		{Type: raftpb.MsgSnap, To: follower, Snapshot: &snap},
		{Type: raftpb.MsgApp, To: 0x9},
	}
	rest := n.sendSnapshots(msgs)
	if len(rest) != 2 || rest[0].Type != raftpb.MsgHeartbeat || rest[1].Type != raftpb.MsgApp {
		t.Fatalf("messages left for the batch: %v, want the heartbeat then the append", rest)
	}
	if len(msgs[1].Snapshot.Data) != 0 {
		t.Fatal("filling the message wrote into the snapshot raft handed out")
	}
	var got raftpb.Message
	waitfor.Eventually(t, 10*time.Second, func() error {
		to := sent.to(follower)
		if len(to) == 0 {
			return errors.New("no snapshot sent yet")
		}
		got = to[0]
		return nil
	})
	if got.Type != raftpb.MsgSnap || got.Snapshot == nil || got.Snapshot.Metadata.Index != snap.Metadata.Index {
		t.Fatalf("sent %v (%v), want the snapshot at %d", got.Type, got.Snapshot, snap.Metadata.Index)
	}
	rs := &api.RaftSnapshot{}
	if err := proto.Unmarshal(got.Snapshot.Data, rs); err != nil {
		t.Fatalf("decode the sent snapshot: %v", err)
	}
	rebuilt := rafttest.NewKV()
	if err := rebuilt.Restore(rs.Store, snap.Metadata.Index); err != nil {
		t.Fatal(err)
	}
	if v, ok := rebuilt.Get("k00"); !ok || v != "0" {
		t.Fatalf("state rebuilt from the sent snapshot: k00 = %q %v, want 0", v, ok)
	}
}
