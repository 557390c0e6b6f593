package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Volume affinity (docs/adr/0061-volumes.md). A named volume lives on one
// node: the scheduler records that node (Volume.node_id) in the proposal
// that places the first replica using the volume, and from then on places
// every replica using it there and nowhere else. A replica whose volume's
// node cannot take it waits PENDING with volume_unavailable, naming the
// volume and the node: placing it elsewhere would start it on an empty
// volume, which is how Swarm loses a database's data.

// ReasonVolumeUnavailable is the pending reason of a replica whose volume
// lives on a node that cannot take it now.
const ReasonVolumeUnavailable = reason.VolumeUnavailable

// setVolume records v as the latest content of its volume. The index is
// keyed by name, which is how specs name volumes; an older event (queued
// before a tentative placement was committed) does not undo a newer one.
func (ix *index) setVolume(v *api.Volume) {
	name := v.GetSpec().GetName()
	old := ix.volumes[name]
	if old != nil && old.GetId() == v.GetId() {
		// The event of the version a tentative placement was read from
		// may come after it: it does not take the placement back.
		older := v.GetMeta().GetVersion() < old.GetMeta().GetVersion() ||
			v.GetMeta().GetVersion() == old.GetMeta().GetVersion() && v.GetNodeId() == "" && old.GetNodeId() != ""
		if older {
			return
		}
	}
	ix.volumes[name] = v
	if old == nil || old.GetNodeId() != v.GetNodeId() || old.GetId() != v.GetId() || !proto.Equal(old.GetMove(), v.GetMove()) {
		ix.recheckAll = true
	}
}

func (ix *index) deleteVolume(v *api.Volume) {
	name := v.GetSpec().GetName()
	if old := ix.volumes[name]; old != nil && old.GetId() == v.GetId() {
		delete(ix.volumes, name)
		ix.recheckAll = true
	}
}

// volumeHome is the node the volumes vols live on ("" while none is
// placed), or the pending message when they cannot all be mounted on one
// node. A per-slot volume not created yet lives nowhere yet: the replica
// placed first creates it (slotvolumes.go).
func volumeHome(ix *index, vols []taskVolume) (home, homeOf string, msg string) {
	for _, tv := range vols {
		v := ix.volumes[tv.name]
		if v == nil {
			if tv.mount != nil {
				continue
			}
			return "", "", fmt.Sprintf("volume %s does not exist", tv.name)
		}
		if msg := slotVolumeMismatch(tv, v); msg != "" {
			return "", "", msg
		}
		switch n := v.GetNodeId(); {
		case n == "":
		case home == "":
			home, homeOf = n, tv.name
		case n != home:
			return "", "", fmt.Sprintf("volumes %s and %s live on different nodes (%s, %s): no node has both",
				homeOf, tv.name, nodeName(ix, home), nodeName(ix, n))
		}
	}
	return home, homeOf, ""
}

// decideWithVolumes decides the tasks of a service whose spec mounts
// volumes (named, names, or per slot), one at a time: the first placed
// records where every unplaced volume lives, creating its per-slot ones,
// and the others follow it.
func (s *Scheduler) decideWithVolumes(ix *index, serviceID string, p *needs, spec *api.ServiceSpec, names []string, tasks []*api.Task, writes []write) []write {
	for _, t := range tasks {
		vols, msg := taskVolumes(spec, names, t)
		var home, volume string
		if msg == "" {
			home, volume, msg = volumeHome(ix, vols)
		}
		if msg != "" {
			writes = s.setPending(writes, t, ReasonVolumeUnavailable, msg)
			continue
		}
		ids, err := newVolumeIDs(ix, vols)
		if err != nil {
			writes = s.setPending(writes, t, ReasonVolumeUnavailable, err.Error())
			continue
		}
		var ni *nodeInfo
		switch {
		case home != "":
			if t.GetNodeId() != "" && t.GetNodeId() != home {
				writes = s.setPending(writes, t, ReasonVolumeUnavailable, fmt.Sprintf(
					"volume %s lives on node %s; this replica may run only on node %s", volume, nodeName(ix, home), nodeName(ix, t.GetNodeId())))
				continue
			}
			ni = ix.nodes[home]
			ex := exUnavailable
			if ni != nil && ni.node != nil {
				ex = p.check(ni)
			}
			if ex != exNone {
				var moved bool
				if writes, moved = s.moveVolumes(ix, writes, serviceID, p, spec, vols, home, ex, t); moved {
					continue
				}
				writes = s.setPending(writes, t, ReasonVolumeUnavailable, fmt.Sprintf(
					"volume %s lives on node %s, which %s: the replica waits for that node", volume, nodeName(ix, home), nodeCondition(ni, ex, p)))
				continue
			}
		case t.GetNodeId() != "":
			// Global or pinned: the orchestrator chose the node.
			ni = ix.nodes[t.GetNodeId()]
			ex := exUnavailable
			if ni != nil {
				ex = p.check(ni)
			}
			if ex != exNone {
				var counts exclusionCounts
				counts[ex] = 1
				writes = s.setPending(writes, t, ReasonNoSuitableNode, counts.message(p, 1))
				continue
			}
		default:
			ni, _ = newSpreadTree(p, eligibleNodes(ix, p, ""), ix.held[serviceID]).next(nil)
			if ni == nil {
				writes = s.setPending(writes, t, ReasonNoSuitableNode, exclusionMessage(ix, p))
				continue
			}
		}
		writes = s.assign(ix, writes, t, ni)
		s.placeVolumes(ix, &writes[len(writes)-1], spec, vols, ids, ni)
	}
	return writes
}

// placeVolumes records in w, the assignment of a replica mounting vols to
// ni, the volumes it places there: those not placed yet, and the per-slot
// ones it creates (with ids), and tells the replica its per-slot volumes
// (Task.volumes). The index sees them at once, so that the batch's next
// replicas follow.
func (s *Scheduler) placeVolumes(ix *index, w *write, spec *api.ServiceSpec, vols []taskVolume, ids map[string]string, ni *nodeInfo) {
	var resolved []*api.TaskVolume
	for _, tv := range vols {
		w.onVolumes = append(w.onVolumes, tv.name)
		v := ix.volumes[tv.name]
		switch {
		case v == nil:
			placed := newSlotVolume(spec, tv, ids[tv.name])
			placed.NodeId, placed.PlacedAt = ni.id, timestamppb.New(s.now())
			ix.volumes[tv.name] = placed
			w.volumes = append(w.volumes, placed)
			w.oldVolumes = append(w.oldVolumes, nil)
			v = placed
		case v.GetNodeId() == "":
			placed := proto.CloneOf(v)
			placed.NodeId, placed.PlacedAt = ni.id, timestamppb.New(s.now())
			ix.volumes[tv.name] = placed
			w.volumes = append(w.volumes, placed)
			w.oldVolumes = append(w.oldVolumes, v)
			v = placed
		}
		if tv.mount != nil {
			resolved = append(resolved, &api.TaskVolume{
				Target: tv.mount.GetTarget(), Name: tv.name, Id: v.GetId(), Options: maps.Clone(v.GetSpec().GetOptions()),
			})
		}
	}
	w.task.Volumes = resolved
}

// nodeName is a node's hostname, or its id when the scheduler does not
// know the node.
func nodeName(ix *index, id string) string {
	if ni := ix.nodes[id]; ni != nil && ni.node != nil {
		return placement.Hostname(ni.node)
	}
	return id
}

// nodeCondition says why node ni cannot take a replica now, for a pending
// message: "is down", "is drained", or the filter that turned it down.
func nodeCondition(ni *nodeInfo, ex exclusion, p *needs) string {
	if ni == nil || ni.node == nil {
		return "is no longer in the cluster"
	}
	n := ni.node
	if st := n.GetStatus().GetState(); st != api.NodeStatusState_NODE_STATUS_STATE_READY {
		return "is " + enumword.Of(st)
	}
	switch n.GetAvailability() {
	case api.NodeAvailability_NODE_AVAILABILITY_DRAIN:
		return "is drained"
	case api.NodeAvailability_NODE_AVAILABILITY_PAUSE:
		return "is paused"
	}
	var counts exclusionCounts
	counts[ex] = 1
	msg := counts.message(p, 1)
	// "no suitable node (1 node with insufficient memory)" → "is a node
	// with insufficient memory".
	msg = strings.TrimSuffix(strings.TrimPrefix(msg, "no suitable node (1 node "), ")")
	return "is a node " + msg
}

// updateVolumes records in tx the volumes w places, creating those it
// creates (no old entry), and checks that every volume w's task mounts
// then lives on its node. stale: one of them changed, went or was taken
// by another volume of its name since the scheduler read it, or an
// earlier proposal that placed it failed, and w must be decided again.
func updateVolumes(tx *store.Tx, w write) (stale bool, err error) {
	for i, v := range w.volumes {
		write, verb := tx.Update, "record"
		if w.oldVolumes[i] == nil {
			write, verb = tx.Create, "create"
		}
		if err := write(v); err != nil {
			if errors.Is(err, store.ErrVersionConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) {
				return true, nil
			}
			return false, fmt.Errorf("%s volume %s on node %s: %w", verb, v.GetSpec().GetName(), v.GetNodeId(), err)
		}
	}
	// The batch decided this task after another placed the volume; that
	// other's proposal may have failed, or not be applied yet.
	for _, name := range w.onVolumes {
		if v := tx.FindVolumeByName(name); v == nil || v.GetNodeId() != w.task.GetNodeId() {
			return true, nil
		}
	}
	return false, nil
}

// undoVolumes takes back the placements w made in the index, where no
// later event replaced them: a volume it created is forgotten.
func undoVolumes(ix *index, w write) {
	for i, v := range w.volumes {
		name := v.GetSpec().GetName()
		if ix.volumes[name] != v {
			continue
		}
		if w.oldVolumes[i] == nil {
			delete(ix.volumes, name)
		} else {
			ix.volumes[name] = w.oldVolumes[i]
		}
	}
}

// rereadVolumes reads the volumes w's task mounts (those it placed among
// them) from the store, which moved on without w.
func rereadVolumes(ix *index, tx store.ReadTx, w write) {
	for _, name := range w.onVolumes {
		if cur := tx.FindVolumeByName(name); cur != nil {
			ix.volumes[name] = cur
		} else {
			delete(ix.volumes, name)
		}
		ix.recheckAll = true
	}
}
