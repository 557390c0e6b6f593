package dispatcher

import (
	"context"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/volumemove"
)

// ReportVolumeMove implements api.DispatcherServiceServer: a volume copy's
// destination reports on it (docs/adr/0064-volume-move.md). The node is
// the session's; the mover's rules decide what the report may change.
func (s *Server) ReportVolumeMove(ctx context.Context, req *api.ReportVolumeMoveRequest) (*api.ReportVolumeMoveResponse, error) {
	_, sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	if err := volumemove.Report(ctx, s.st, sess.nodeID, req, s.cfg.now()); err != nil {
		return nil, err
	}
	return &api.ReportVolumeMoveResponse{}, nil
}
