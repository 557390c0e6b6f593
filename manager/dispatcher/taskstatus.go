package dispatcher

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// statusChange is a replica status reported by the agent of nodeID.
type statusChange struct {
	nodeID string
	status *api.TaskStatus
}

// furtherStatus keeps, of two reports for one replica, the one further
// along; of two at the same state, the newer.
func furtherStatus(pending, newer statusChange) statusChange {
	if newer.status.GetState() < pending.status.GetState() {
		return pending
	}
	return newer
}

// acceptStatus decides whether a report may replace the stored status of
// t: the replica must be on the reporting node, the state must not move
// backward, and something must change.
func acceptStatus(t *api.Task, c statusChange) bool {
	return t != nil && t.NodeId == c.nodeID &&
		c.status.GetState() >= t.GetStatus().GetState() &&
		!proto.Equal(t.Status, c.status)
}

// settles reports whether c is a replica running or ended: what a caller
// (service create, an update's next step) waits for, written without
// waiting for the batch window (docs/adr/0028).
func settles(c statusChange) bool {
	return c.status.GetState() >= api.TaskState_TASK_STATE_RUNNING
}

// UpdateTaskStatus implements api.DispatcherServiceServer. It returns once
// the accepted updates are committed.
func (s *Server) UpdateTaskStatus(ctx context.Context, req *api.UpdateTaskStatusRequest) (*api.UpdateTaskStatusResponse, error) {
	t, sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	changes := make(map[string]statusChange, len(req.GetUpdates()))
	s.st.View(func(tx store.ReadTx) {
		node := tx.GetNode(sess.nodeID)
		for _, u := range req.GetUpdates() {
			if u.GetStatus() == nil {
				s.cfg.log.Warn("status update without a status", "node_id", sess.nodeID, "task_id", u.GetTaskId())
				continue
			}
			c := statusChange{nodeID: sess.nodeID, status: s.withCheckedAddresses(node, u.TaskId, u.Status)}
			if old, ok := changes[u.TaskId]; ok {
				c = furtherStatus(old, c)
			}
			task := tx.GetTask(u.TaskId)
			switch {
			case task == nil:
				s.cfg.log.Info("status update for an unknown replica", "node_id", sess.nodeID, "task_id", u.TaskId)
			case task.NodeId != sess.nodeID:
				s.cfg.log.Warn("status update for a replica of another node", "node_id", sess.nodeID,
					"task_id", u.TaskId, "task_node_id", task.NodeId)
			case acceptStatus(task, c):
				changes[u.TaskId] = c
			}
		}
	})
	if len(changes) == 0 {
		return &api.UpdateTaskStatusResponse{}, nil
	}
	if err := s.waitWrite(ctx, t, sess, t.statuses.add(changes)); err != nil {
		return nil, err
	}
	return &api.UpdateTaskStatusResponse{}, nil
}

// writeStatuses records replica statuses, checking each against the task
// as it is when written: it may have moved or advanced since it was read.
func (s *Server) writeStatuses(ctx context.Context, items map[string]statusChange) error {
	s.metrics.statusBatches.Observe(float64(len(items)))
	return writeChunked(ctx, s.st, slices.Sorted(maps.Keys(items)), func(tx *store.Tx, id string) int {
		c := items[id]
		task := tx.GetTask(id)
		if !acceptStatus(task, c) {
			return 0
		}
		if c.status.GetState() == api.TaskState_TASK_STATE_RUNNING && task.RunningSince == nil {
			// An update's monitor period counts from here, on the
			// leader's clock rather than the agent's (docs/design.md §8).
			task.RunningSince = timestamppb.New(s.cfg.now())
		}
		task.Status = c.status
		if err := tx.Update(task); err != nil {
			s.cfg.log.Warn("record replica status", "task_id", id, "err", err)
			return 0
		}
		return proto.Size(task)
	})
}
