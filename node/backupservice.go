package node

import (
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/backup"
)

// backupService serves backups from whatever manager this node runs now
// (none before init or join; a new one after them).
type backupService struct {
	api.UnimplementedBackupServiceServer
	n *Node
}

func (b backupService) Backup(req *api.BackupRequest, stream api.BackupService_BackupServer) error {
	m := b.n.Manager()
	if m == nil {
		return reason.Error(codes.FailedPrecondition, reason.NotAManager, "this node is not a manager")
	}
	return backup.NewServer(m.Raft, m.Store).Backup(req, stream)
}
