package transport

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/internal/waitfor"
)

func snapMsg(to uint64, size int) raftpb.Message {
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{7})
	rng.Read(data)
	return raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: to, Term: 1,
		Snapshot: &raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: 42, Term: 1}}}
}

// waitSnapshot waits for the first snapshot report and checks it.
func waitSnapshot(t *testing.T, r *reporter, want snapReport) {
	t.Helper()
	waitfor.Holds(t, 15*time.Second, "a snapshot report", func() (bool, string) {
		return len(r.snapshots()) > 0, "none"
	})
	if got := r.snapshots(); len(got) != 1 || got[0] != want {
		t.Fatalf("snapshot reports %v, want [%v]", got, want)
	}
}

func TestLargeSnapshotIsStreamedIntact(t *testing.T) {
	s := &fakeServer{}
	addr, _ := serve(t, "127.0.0.1:0", s)
	tr, r := newTransport(t, Config{})
	mustAdd(t, tr, 2, addr)

	snap := snapMsg(2, 9<<20)
	// Unary, streamed, unary: the stream keeps its place in the order.
	tr.Send([]raftpb.Message{app(2, 1), snap, app(2, 2)})
	waitfor.Holds(t, 15*time.Second, "three messages", func() (bool, string) {
		n := len(s.received())
		return n == 3, fmt.Sprintf("%d messages", n)
	})
	got := s.received()
	if got[0].Index != 1 || got[1].Type != raftpb.MsgSnap || got[2].Index != 2 {
		t.Fatalf("received %v %v %v, want MsgApp 1, MsgSnap, MsgApp 2", got[0].Type, got[1].Type, got[2].Type)
	}
	if !bytes.Equal(got[1].Snapshot.Data, snap.Snapshot.Data) || got[1].Snapshot.Metadata.Index != 42 {
		t.Fatalf("snapshot changed in transit: %d bytes at index %d", len(got[1].Snapshot.Data), got[1].Snapshot.Metadata.Index)
	}
	if _, streamed, _ := s.counts(); streamed != 1 {
		t.Fatalf("%d messages streamed, want the snapshot only", streamed)
	}
	waitSnapshot(t, r, snapReport{2, raft.SnapshotFinish})
}

func TestSmallSnapshotIsReportedToo(t *testing.T) {
	s := &fakeServer{}
	addr, _ := serve(t, "127.0.0.1:0", s)
	tr, r := newTransport(t, Config{})
	mustAdd(t, tr, 2, addr)
	tr.Send([]raftpb.Message{snapMsg(2, 1024)})
	waitSnapshot(t, r, snapReport{2, raft.SnapshotFinish})
	if _, streamed, _ := s.counts(); streamed != 0 {
		t.Fatal("a small snapshot was streamed")
	}
}

func TestFailedSnapshotIsReported(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server *fakeServer // nil: nobody listens
		size   int
	}{
		{"peer down, streamed", nil, 3 << 20},
		{"peer down, unary", nil, 1024},
		{"refused", &fakeServer{refuse: status.Error(codes.Unavailable, "busy")}, 3 << 20},
		// The handler takes the first chunk and then stops reading: the
		// stream makes no progress and is abandoned after SendTimeout.
		{"stalled", &fakeServer{block: make(chan struct{})}, 9 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			if tc.server != nil {
				addr, _ = serve(t, "127.0.0.1:0", tc.server)
				if tc.server.block != nil {
					t.Cleanup(func() { close(tc.server.block) })
				}
			}
			tr, r := newTransport(t, Config{SendTimeout: 300 * time.Millisecond})
			mustAdd(t, tr, 2, addr)
			start := time.Now()
			tr.Send([]raftpb.Message{snapMsg(2, tc.size)})
			waitSnapshot(t, r, snapReport{2, raft.SnapshotFailure})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Fatalf("failure reported after %s", elapsed)
			}
			if r.unreachableCount(2) == 0 {
				t.Fatal("failed snapshot did not report the peer unreachable")
			}
		})
	}
}

func TestSnapshotToUnknownPeerFails(t *testing.T) {
	tr, r := newTransport(t, Config{})
	tr.Send([]raftpb.Message{snapMsg(7, 10)})
	waitSnapshot(t, r, snapReport{7, raft.SnapshotFailure})
}
