package volumes

import (
	"fmt"
	"maps"

	"github.com/jaco-project/jaco/api"
)

// SlotVolumes fills each per-slot volume mount of spec, the replica's
// spec with its templates expanded (a copy of t's, since a per-slot
// source is a template), with the volume the scheduler resolved for it
// (Task.volumes, docs/adr/0061-volumes.md): its id and options, which the
// runtime needs to find or make the volume's directory. The source the
// agent expanded must name the volume the scheduler chose: both expand
// with spectemplate's data of the task, so a difference means a manager
// and an agent that disagree, and the replica is refused rather than
// started on another volume.
func SlotVolumes(t *api.Task, spec *api.ServiceSpec) error {
	for i, m := range t.GetSpec().GetMounts() {
		if !api.IsSlotVolumeMount(m) {
			continue
		}
		em := spec.GetMounts()[i]
		var tv *api.TaskVolume
		for _, v := range t.GetVolumes() {
			if v.GetTarget() == m.GetTarget() {
				tv = v
			}
		}
		switch {
		case tv == nil:
			return fmt.Errorf("volume mount at %s: source %q names a per-slot volume, and the manager resolved none for this replica",
				m.GetTarget(), m.GetSource())
		case tv.GetName() != em.GetSource():
			return fmt.Errorf("volume mount at %s: source %q expands to %q on this node, but the manager resolved volume %s",
				m.GetTarget(), m.GetSource(), em.GetSource(), tv.GetName())
		}
		em.VolumeId, em.VolumeOptions = tv.GetId(), maps.Clone(tv.GetOptions())
	}
	return nil
}
