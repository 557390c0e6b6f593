package orchestrator

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// A volume being copied off a draining node (docs/adr/0064-volume-move.md)
// keeps the drain DRAINING, saying how far the copy is, after every
// replica on the node ended: the node must not be DRAINED (and removed,
// for `node rm`) before its data has arrived elsewhere. Once the copy is
// verified (CLEANUP) the drain ends.
func TestDrainWaitsForVolumesMovingOffTheNode(t *testing.T) {
	h := newHarness(t)
	h.setNode(readyNode("n1", nil))
	h.setNode(readyNode("n2", nil))
	move := &api.VolumeMove{FromNode: "n1", ToNode: "n2", State: api.VolumeMoveState_VOLUME_MOVE_STATE_COPYING, BytesDone: 3 << 20, BytesTotal: 8 << 20}
	h.update(func(tx *store.Tx) error {
		return tx.Create(&api.Volume{Id: "v1", Spec: &api.VolumeSpec{Name: "db", Driver: "local"}, NodeId: "n1", Move: move})
	})
	d := h.o.newDrainer()
	h.startDrain("n1", 0, true, false)
	dr, _ := h.drainPass(d, "n1")
	if dr.GetState() != api.DrainState_DRAIN_STATE_DRAINING || !strings.Contains(dr.GetMessage(), "volume db: copied 3.0 MiB of 8.0 MiB") {
		t.Fatalf("drain %v %q while db is copied off the node, want DRAINING with the copy's progress", dr.GetState(), dr.GetMessage())
	}
	h.update(func(tx *store.Tx) error {
		v := tx.GetVolume("v1")
		v.NodeId, v.Move.State = "n2", api.VolumeMoveState_VOLUME_MOVE_STATE_CLEANUP
		return tx.Update(v)
	})
	dr, _ = h.drainPass(d, "n1")
	if h.node("n1") != nil && dr.GetState() != api.DrainState_DRAIN_STATE_DRAINED {
		t.Fatalf("drain %v %q once db's copy was verified, want DRAINED", dr.GetState(), dr.GetMessage())
	}
}
