package backup

import (
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// NameLostLeader wraps the raftproxy's BackupService so that a backup
// forwarded to a leader that dies mid-transfer fails saying so. Without
// it the caller gets the bare transport error of the forwarded stream
// (code unavailable, no reason word), which the CLI can only read as its
// own daemon being unreachable. leader names the leader calls are
// forwarded to ("" when this manager leads and serves them itself).
func NameLostLeader(proxied api.BackupServiceServer, leader func() string, log *slog.Logger) api.BackupServiceServer {
	return lostLeader{BackupServiceServer: proxied, leader: leader, log: log}
}

type lostLeader struct {
	api.BackupServiceServer
	leader func() string
	log    *slog.Logger
}

func (l lostLeader) Backup(req *api.BackupRequest, stream grpc.ServerStreamingServer[api.BackupChunk]) error {
	name := l.leader()
	if name != "" {
		l.log.Info("forwarding a backup to the leader", "leader", name)
	}
	err := l.BackupServiceServer.Backup(req, stream)
	if err == nil || name == "" || reason.Of(err) != "" || stream.Context().Err() != nil {
		// Served here, refused with a reason by the leader, or given up
		// by the caller: the error says what happened already.
		return err
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
		return reason.Error(codes.Unavailable, reason.Unavailable,
			"lost the leader %s mid-backup (%s); no file was written; retry", name, st.Message())
	}
	return err
}
