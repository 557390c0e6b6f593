package volumemove

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Report records what node nodeID, a volume's destination, says of its
// copy: progress, a failure, or a verified copy. A verified copy moves
// the volume in one write: node_id becomes the destination, generation
// the copy's, the move CLEANUP, and both nodes lose their order; from
// then on the scheduler places the volume's replicas there. A report of
// another node, generation or state (late, repeated) changes nothing.
func Report(ctx context.Context, st *store.Store, nodeID string, r *api.ReportVolumeMoveRequest, now time.Time) error {
	err := st.Update(ctx, func(tx *store.Tx) error {
		v := tx.GetVolume(r.GetVolumeId())
		m := v.GetMove()
		if m == nil || m.GetToNode() != nodeID || r.GetGeneration() != v.GetGeneration()+1 ||
			m.GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING && m.GetState() != api.VolumeMoveState_VOLUME_MOVE_STATE_FAILED {
			return nil
		}
		switch {
		case r.GetDone():
			v.NodeId, v.Generation, v.PlacedAt = m.GetToNode(), r.GetGeneration(), timestamppb.New(now)
			m.State, m.Error = api.VolumeMoveState_VOLUME_MOVE_STATE_CLEANUP, ""
			m.BytesDone = m.GetBytesTotal()
			if err := dropOrders(tx, m, v.GetId()); err != nil {
				return err
			}
		case r.GetError() != "":
			m.State, m.Error = api.VolumeMoveState_VOLUME_MOVE_STATE_FAILED, r.GetError()
			m.Attempts++
		default:
			m.State = api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING
			m.BytesDone, m.BytesTotal = r.GetBytesDone(), r.GetBytesTotal()
		}
		return tx.Update(v)
	})
	if err != nil {
		return fmt.Errorf("record volume move report: %w", err)
	}
	return nil
}

// dropOrders removes both nodes' orders for the move mv of volume
// volumeID; a node no longer in the store has none.
func dropOrders(tx *store.Tx, mv *api.VolumeMove, volumeID string) error {
	for _, id := range []string{mv.GetFromNode(), mv.GetToNode()} {
		if err := dropOrder(tx, id, volumeID); err != nil {
			return err
		}
	}
	return nil
}

// dropOrder removes node id's orders for volume volumeID.
func dropOrder(tx *store.Tx, id, volumeID string) error {
	n := tx.GetNode(id)
	if n == nil {
		return nil
	}
	kept := slices.DeleteFunc(n.GetVolumeMoves(), func(o *api.VolumeMoveOrder) bool { return o.GetVolumeId() == volumeID })
	if len(kept) == len(n.GetVolumeMoves()) {
		return nil
	}
	n.VolumeMoves = kept
	return tx.Update(n)
}
