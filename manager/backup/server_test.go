package backup

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/backup/internal/backuptest"
	"github.com/jaco-project/jaco/manager/state/raft"
)

type fakeRaft struct {
	leader   bool
	barriers int
	barrier  error
}

func (f *fakeRaft) IsLeader() bool { return f.leader }
func (f *fakeRaft) Barrier(context.Context) error {
	f.barriers++
	return f.barrier
}
func (f *fakeRaft) Term() uint64      { return 7 }
func (f *fakeRaft) ClusterID() string { return "cluster-1" }
func (f *fakeRaft) Members() []*api.RaftMember {
	return []*api.RaftMember{{RaftId: 5, NodeId: "node-a", Address: "10.0.0.1:4242"}}
}
func (f *fakeRaft) RemovedMembers() []*api.RaftMember {
	return []*api.RaftMember{{RaftId: 3, NodeId: "node-old"}}
}

type fakeStore struct{ snap *api.StoreSnapshot }

func (f fakeStore) SaveWithIndex() (*api.StoreSnapshot, uint64) { return f.snap, 42 }

// chunkStream collects what the server sends.
type chunkStream struct {
	grpc.ServerStream
	ctx    context.Context
	chunks [][]byte
}

func (s *chunkStream) Context() context.Context { return s.ctx }
func (s *chunkStream) Send(c *api.BackupChunk) error {
	s.chunks = append(s.chunks, c.Data)
	return nil
}

func TestServerStreamsAFreshBackupInChunks(t *testing.T) {
	want := backuptest.Backup(t)
	// A store big enough for several chunks.
	want.Snapshot.Store.Clusters[0].OperatorTokenHash = bytes.Repeat([]byte{7}, 3*ChunkSize)
	r := &fakeRaft{leader: true}
	s := NewServer(r, fakeStore{snap: want.Snapshot.Store})
	stream := &chunkStream{ctx: context.Background()}
	if err := s.Backup(&api.BackupRequest{}, stream); err != nil {
		t.Fatal(err)
	}
	if r.barriers != 1 {
		t.Errorf("%d barriers, want 1 before reading the store", r.barriers)
	}
	if len(stream.chunks) < 4 {
		t.Errorf("%d chunks, want at least 4", len(stream.chunks))
	}
	for i, c := range stream.chunks {
		if len(c) > ChunkSize {
			t.Errorf("chunk %d is %d bytes, over %d", i, len(c), ChunkSize)
		}
	}
	got, err := backupfile.Unmarshal(bytes.Join(stream.chunks, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterID != "cluster-1" || got.Index != 42 || got.Term != 7 {
		t.Errorf("backup header %+v", got)
	}
	if !proto.Equal(got.Snapshot, want.Snapshot) {
		t.Error("streamed snapshot differs from the store and membership")
	}
}

func TestServerRefusesWithoutLeadership(t *testing.T) {
	// Leadership lost during the barrier: raft's Barrier says ErrNotLeader
	// then, never "outcome unknown" (an empty batch changes nothing).
	lost := errors.Join(errors.New("leadership changed before a barrier applied"), raft.ErrNotLeader)
	for _, r := range []*fakeRaft{{leader: false}, {leader: true, barrier: lost}} {
		s := NewServer(r, fakeStore{snap: backuptest.Backup(t).Snapshot.Store})
		stream := &chunkStream{ctx: context.Background()}
		err := s.Backup(&api.BackupRequest{}, stream)
		if reason.Of(err) != reason.NoLeader {
			t.Errorf("leader=%v barrier=%v: err %v, want no_leader", r.leader, r.barrier, err)
		}
		if len(stream.chunks) != 0 {
			t.Errorf("sent %d chunks after a refusal", len(stream.chunks))
		}
	}
}
