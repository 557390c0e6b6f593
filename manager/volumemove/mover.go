// Package volumemove is the leader's volume mover (docs/adr/0064-volume-
// move.md): it drives each Volume.move the scheduler asked for through
// its states, from the store alone, so a new leader goes on where the
// last one stopped.
//
//   - STOPPING: every replica mounting the volume on the old node is
//     stopped (desired SHUTDOWN), whatever the update order: a volume
//     cannot be copied consistently while it is written. Once each has
//     ended, both nodes get their order (Node.volume_moves) and the move
//     is COPYING.
//   - COPYING and FAILED are the destination's: it pulls, reports
//     progress and failures (the dispatcher's ReportVolumeMove, Report
//     here) and tries again with backoff; a verified copy makes the move
//     CLEANUP and the volume the destination's, in one write.
//   - CLEANUP: once a replica mounting the volume runs on its new node,
//     the old node's copy is named in its removed_volumes, with its
//     generation, and the move is over.
//
// A move whose node leaves the cluster is abandoned: the volume stays
// where node_id says.
package volumemove

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// retryDelay is the wait after a failed write.
const retryDelay = time.Second

// Mover is the leader subsystem.
type Mover struct {
	st  *store.Store
	log *slog.Logger
}

// New returns a mover of st's volumes.
func New(st *store.Store, log *slog.Logger) *Mover { return &Mover{st: st, log: log} }

// Run moves volumes until ctx ends.
func (m *Mover) Run(ctx context.Context) {
	// The filter keeps no event (none is cloned) and kicks the loop: a
	// burst of writes is one pass. The channel carries only resets.
	kick := make(chan struct{}, 1)
	events := m.st.Watch(ctx, store.Any(store.ObjectType[*api.Volume](), store.ObjectType[*api.Task](), store.ObjectType[*api.Node]()),
		func(store.Event) bool {
			select {
			case kick <- struct{}{}:
			default:
			}
			return false
		})
	for {
		var retry <-chan time.Time
		if err := m.Pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Warn("volume move step failed; retrying", "err", err)
			retry = time.After(retryDelay)
		}
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-kick:
		case <-retry:
		case <-ctx.Done():
			return
		}
	}
}

// Pass takes every move one step, in one write.
func (m *Mover) Pass(ctx context.Context) error {
	var any bool
	m.st.View(func(tx store.ReadTx) {
		any = slices.ContainsFunc(tx.ListVolumes(), func(v *api.Volume) bool { return v.GetMove() != nil })
	})
	if !any {
		return nil // the usual case: no write to try
	}
	var logs []func()
	err := m.st.Update(ctx, func(tx *store.Tx) error {
		logs = logs[:0]
		for _, v := range tx.ListVolumes() {
			mv := v.GetMove()
			if mv == nil {
				continue
			}
			from, to := tx.GetNode(mv.GetFromNode()), tx.GetNode(mv.GetToNode())
			if from == nil || to == nil {
				v.Move = nil
				if err := dropOrders(tx, mv, v.GetId()); err != nil {
					return err
				}
				logs = append(logs, func() {
					m.log.Warn("volume move abandoned: a node left the cluster", "volume", v.GetSpec().GetName(), "node_id", v.GetNodeId())
				})
				if err := tx.Update(v); err != nil {
					return err
				}
				continue
			}
			switch mv.GetState() {
			case api.VolumeMoveState_VOLUME_MOVE_STATE_STOPPING:
				stopping, err := stopReplicas(tx, v, from.GetId())
				if err != nil || stopping > 0 {
					if err != nil {
						return err
					}
					continue
				}
				if err := order(tx, v, from, to); err != nil {
					return err
				}
				mv.State = api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING
				if err := tx.Update(v); err != nil {
					return err
				}
				logs = append(logs, func() {
					m.log.Info("volume move: replicas stopped, copying", "volume", v.GetSpec().GetName(),
						"from", from.GetHostname(), "to", to.GetHostname())
				})
			case api.VolumeMoveState_VOLUME_MOVE_STATE_CLEANUP:
				if !runsOn(tx, v, to.GetId()) {
					continue
				}
				ref := &api.VolumeRef{Id: v.GetId(), Name: v.GetSpec().GetName(), Generation: mv.GetFromGeneration()}
				from.RemovedVolumes = append(from.RemovedVolumes, ref)
				if n := len(from.RemovedVolumes); n > api.MaxRemovedVolumes {
					from.RemovedVolumes = from.RemovedVolumes[n-api.MaxRemovedVolumes:]
				}
				if err := tx.Update(from); err != nil {
					return err
				}
				v.Move = nil
				if err := tx.Update(v); err != nil {
					return err
				}
				logs = append(logs, func() {
					m.log.Info("volume moved; its old copy goes", "volume", v.GetSpec().GetName(),
						"from", from.GetHostname(), "to", to.GetHostname())
				})
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("volume moves: %w", err)
	}
	for _, l := range logs {
		l()
	}
	return nil
}

// mounts reports whether t mounts v.
func mounts(t *api.Task, v *api.Volume) bool {
	return slices.Contains(api.VolumeNames(t.GetSpec()), v.GetSpec().GetName()) ||
		slices.ContainsFunc(t.GetVolumes(), func(tv *api.TaskVolume) bool { return tv.GetId() == v.GetId() })
}

func ended(t *api.Task) bool {
	return t.GetStatus().GetState() >= api.TaskState_TASK_STATE_COMPLETE
}

// stopReplicas stops v's replicas on node and counts those not ended.
func stopReplicas(tx *store.Tx, v *api.Volume, node string) (int, error) {
	var stopping int
	for _, t := range tx.ListTasksByNode(node) {
		if ended(t) || !mounts(t, v) {
			continue
		}
		stopping++
		if t.GetDesiredState() <= api.TaskState_TASK_STATE_RUNNING {
			t.DesiredState = api.TaskState_TASK_STATE_SHUTDOWN
			if err := tx.Update(t); err != nil {
				return 0, fmt.Errorf("stop replica %s: %w", t.GetId(), err)
			}
		}
	}
	return stopping, nil
}

// order tells both nodes of v's copy.
func order(tx *store.Tx, v *api.Volume, from, to *api.Node) error {
	o := &api.VolumeMoveOrder{
		VolumeId: v.GetId(), Name: v.GetSpec().GetName(), Options: v.GetSpec().GetOptions(),
		Generation: v.GetGeneration() + 1, FromNode: from.GetId(), FromAddress: from.GetAddress(), ToNode: to.GetId(),
	}
	for _, n := range []*api.Node{from, to} {
		kept := slices.DeleteFunc(n.GetVolumeMoves(), func(x *api.VolumeMoveOrder) bool { return x.GetVolumeId() == v.GetId() })
		n.VolumeMoves = append(kept, proto.CloneOf(o))
		if err := tx.Update(n); err != nil {
			return fmt.Errorf("order volume move on node %s: %w", n.GetId(), err)
		}
	}
	return nil
}

// runsOn reports whether a replica mounting v runs, or ran, on node.
func runsOn(tx *store.Tx, v *api.Volume, node string) bool {
	return slices.ContainsFunc(tx.ListTasksByNode(node), func(t *api.Task) bool {
		return mounts(t, v) && t.GetStatus().GetState() >= api.TaskState_TASK_STATE_RUNNING &&
			t.GetStatus().GetState() <= api.TaskState_TASK_STATE_COMPLETE
	})
}
