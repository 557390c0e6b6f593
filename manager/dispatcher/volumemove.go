package dispatcher

import (
	"context"
	"time"

	"github.com/jaco-project/jaco/api"
)

// VolumeMoveReports records what a volume copy's destination, node nodeID,
// reports on it, by the volume mover's rules (manager/volumemove.Report):
// the dispatcher only checks who reports. It is handed in by the manager,
// which composes the leader subsystems; none imports another
// (docs/design.md §2).
type VolumeMoveReports func(ctx context.Context, nodeID string, r *api.ReportVolumeMoveRequest, now time.Time) error

// WithVolumeMoveReports sets where the destinations' reports on volume
// copies go (docs/adr/0064-volume-move.md); without it ReportVolumeMove
// is refused as unimplemented.
func WithVolumeMoveReports(f VolumeMoveReports) Option {
	return func(c *config) { c.volumeMoveReports = f }
}

// ReportVolumeMove implements api.DispatcherServiceServer: a volume copy's
// destination reports on it (docs/adr/0064-volume-move.md). The node is
// the session's; the mover's rules decide what the report may change.
func (s *Server) ReportVolumeMove(ctx context.Context, req *api.ReportVolumeMoveRequest) (*api.ReportVolumeMoveResponse, error) {
	if s.cfg.volumeMoveReports == nil {
		return s.UnimplementedDispatcherServiceServer.ReportVolumeMove(ctx, req)
	}
	_, sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	if err := s.cfg.volumeMoveReports(ctx, sess.nodeID, req, s.cfg.now()); err != nil {
		return nil, err
	}
	return &api.ReportVolumeMoveResponse{}, nil
}
