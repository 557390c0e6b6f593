package scheduler

import (
	"fmt"
	"maps"
	"slices"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/spectemplate"
)

// Per-slot volumes (docs/adr/0061-volumes.md): a volume mount whose source
// is a template (db-{{.Task.Slot}}) names, for each replica, the volume
// its source expands to for the replica's slot (spectemplate.
// TaskVolumeSource; a global replica's slot is its node). The scheduler
// expands it before placing the replica: the slot's volume, once it
// exists, binds the replica to its node as a named volume does; when it
// does not exist yet, the assignment of the slot's first replica creates
// it, on that replica's node, in the same proposal. Either way the
// assignment tells the agent the volume's name and id (Task.volumes), and
// the task's spec keeps the template, as the service's does.

// taskVolume is a volume a replica mounts: a named one, or the volume a
// per-slot mount (mount) names for the replica.
type taskVolume struct {
	name  string
	mount *api.Mount
}

// taskVolumes are the volumes t, a replica of spec, mounts: named (names)
// and per slot, each once; or the pending message when a per-slot source
// does not expand for t, which the manager's check of the spec should
// have refused.
func taskVolumes(spec *api.ServiceSpec, names []string, t *api.Task) ([]taskVolume, string) {
	vols := make([]taskVolume, 0, len(names)+1)
	for _, name := range names {
		vols = append(vols, taskVolume{name: name})
	}
	for _, m := range spec.GetMounts() {
		if !api.IsSlotVolumeMount(m) {
			continue
		}
		name, err := spectemplate.TaskVolumeSource(t, m.GetSource())
		if err != nil {
			return nil, fmt.Sprintf("volume mount at %s: %v", m.GetTarget(), err)
		}
		if !slices.ContainsFunc(vols, func(tv taskVolume) bool { return tv.name == name }) {
			vols = append(vols, taskVolume{name: name, mount: m})
		}
	}
	return vols, ""
}

// slotVolumeMismatch is the pending message when v, the volume a per-slot
// mount names, has other options than the mount gives: the volume is not
// what the spec expects (it was created otherwise, by `jaco volume
// create`), as the manager refuses for a named volume. "" when it fits.
func slotVolumeMismatch(tv taskVolume, v *api.Volume) string {
	if tv.mount == nil {
		return ""
	}
	want := tv.mount.GetVolumeOptions()
	if len(want) == 0 || maps.Equal(want, v.GetSpec().GetOptions()) {
		return ""
	}
	return fmt.Sprintf("volume %s exists with other options (%s) than the mount at %s gives (%s): remove the volume, or leave volume-opt out",
		tv.name, api.VolumeOptionWords(v.GetSpec().GetOptions()), tv.mount.GetTarget(), api.VolumeOptionWords(want))
}

// newVolumeIDs mints the ids of the per-slot volumes of vols that do not
// exist yet, before the replica is assigned: a failure leaves it pending.
func newVolumeIDs(ix *index, vols []taskVolume) (map[string]string, error) {
	var ids map[string]string
	for _, tv := range vols {
		if ix.volumes[tv.name] != nil {
			continue
		}
		id, err := newVolumeID()
		if err != nil {
			return nil, fmt.Errorf("create volume %s: %w", tv.name, err)
		}
		if ids == nil {
			ids = map[string]string{}
		}
		ids[tv.name] = id
	}
	return ids, nil
}

// newSlotVolume is the volume a per-slot mount of spec creates, named
// tv.name, as the manager creates a named volume a spec names first
// (created_by_service, the mount's options).
func newSlotVolume(spec *api.ServiceSpec, tv taskVolume, id string) *api.Volume {
	return &api.Volume{
		Id: id, Meta: &api.Meta{}, CreatedByService: spec.GetName(),
		Spec: &api.VolumeSpec{Name: tv.name, Driver: api.LocalVolumeDriver, Options: maps.Clone(tv.mount.GetVolumeOptions())},
	}
}

// newVolumeID mints a per-slot volume's id as the manager mints a named
// volume's.
var newVolumeID = identity.NewID
