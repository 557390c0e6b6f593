package backup

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
)

var _ api.BackupServiceServer = (*Server)(nil)

// ChunkSize is the size of each streamed chunk, well under gRPC's 4 MiB
// message limit.
const ChunkSize = 256 << 10

// Raft is what the server needs from the leader's raft member.
type Raft interface {
	IsLeader() bool
	// Barrier fails with raft.ErrNotLeader when leadership goes, never
	// with raft.ErrOutcomeUnknown: the backup is then refused no_leader.
	Barrier(ctx context.Context) error
	Term() uint64
	ClusterID() string
	Members() []*api.RaftMember
	RemovedMembers() []*api.RaftMember
}

// Store is what the server needs from the store.
type Store interface {
	// SaveWithIndex is the whole store and the applied index it holds.
	SaveWithIndex() (*api.StoreSnapshot, uint64)
}

// Server implements api.BackupServiceServer on the leader; wrap it with
// the raftproxy so any manager forwards.
type Server struct {
	api.UnimplementedBackupServiceServer
	raft  Raft
	store Store
	now   func() time.Time
}

// NewServer returns a Server reading from r and st.
func NewServer(r Raft, st Store) *Server {
	return &Server{raft: r, store: st, now: time.Now}
}

// Take reads a consistent backup: it commits a barrier first, so every
// write acknowledged before the call is in it, then reads the store at
// one applied index.
func (s *Server) Take(ctx context.Context) (*backupfile.Backup, error) {
	if !s.raft.IsLeader() {
		return nil, reason.Error(codes.Unavailable, reason.NoLeader, "this manager stopped leading; retry")
	}
	if err := s.raft.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("commit a barrier before the backup: %w", err)
	}
	term := s.raft.Term()
	st, index := s.store.SaveWithIndex()
	return &backupfile.Backup{
		ClusterID: s.raft.ClusterID(),
		Index:     index,
		Term:      term,
		TakenAt:   s.now(),
		Snapshot: &api.RaftSnapshot{
			Store:          st,
			Members:        s.raft.Members(),
			RemovedMembers: s.raft.RemovedMembers(),
		},
	}, nil
}

// Backup streams Take's backup in ChunkSize pieces.
func (s *Server) Backup(_ *api.BackupRequest, stream api.BackupService_BackupServer) error {
	b, err := s.Take(stream.Context())
	if err != nil {
		return apierror.ToStatus(err)
	}
	data, err := b.Marshal()
	if err != nil {
		return apierror.ToStatus(err)
	}
	for off := 0; off < len(data); off += ChunkSize {
		end := min(off+ChunkSize, len(data))
		if err := stream.Send(&api.BackupChunk{Data: data[off:end]}); err != nil {
			return fmt.Errorf("send backup chunk: %w", err)
		}
	}
	return nil
}
