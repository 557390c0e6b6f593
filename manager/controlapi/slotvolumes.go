package controlapi

import (
	"strconv"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/spectemplate"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Per-slot volumes (docs/adr/0061-volumes.md): a volume mount whose source
// is a template (db-{{.Task.Slot}}) names one volume per slot, which the
// scheduler creates with the slot's first replica. Such a volume is in use
// while a replica of its slot has not ended (taskSlotVolumes), and while
// a service still has its slot: a replicated service's slots 1..replicas,
// a global service's the node the volume lives on.

// taskSlotVolumes are the per-slot volumes task t mounts: those the
// scheduler resolved for it, or, not yet placed, those its slot's sources
// expand to.
func taskSlotVolumes(t *api.Task) []string {
	var names []string
	for _, tv := range t.GetVolumes() {
		names = append(names, tv.GetName())
	}
	if len(names) > 0 {
		return names
	}
	for _, m := range t.GetSpec().GetMounts() {
		if !api.IsSlotVolumeMount(m) {
			continue
		}
		// A source that does not expand names no volume: the replica
		// waits, mounting nothing.
		if name, err := spectemplate.TaskVolumeSource(t, m.GetSource()); err == nil {
			names = append(names, name)
		}
	}
	return names
}

// slotVolumeUser reports whether spec, the spec or previous spec of
// service id, has a per-slot volume mount that expands to vol for a slot
// the service has.
func slotVolumeUser(tx store.ReadTx, id string, spec *api.ServiceSpec, vol *api.Volume) bool {
	if !api.HasSlotVolumes(spec) {
		return false
	}
	svc := spectemplate.Service{ID: id, Name: spec.GetName(), Labels: spec.GetLabels()}
	var slots []string
	if api.PerNode(spec.GetMode()) {
		// A global replica's slot is its node: the one the volume
		// lives on, while that node is in the cluster.
		if n := vol.GetNodeId(); n != "" && tx.GetNode(n) != nil {
			slots = append(slots, n)
		}
	} else {
		for i := uint64(1); i <= spec.GetReplicas(); i++ {
			slots = append(slots, strconv.FormatUint(i, 10))
		}
	}
	name := vol.GetSpec().GetName()
	for _, m := range spec.GetMounts() {
		if !api.IsSlotVolumeMount(m) {
			continue
		}
		for _, slot := range slots {
			if got, err := spectemplate.VolumeSource(m.GetSource(), svc, slot); err == nil && got == name {
				return true
			}
		}
	}
	return false
}
