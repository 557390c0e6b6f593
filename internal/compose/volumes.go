package compose

import (
	"fmt"
	"maps"
	"slices"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/jaco-project/jaco/api"
)

// Named volumes in a stack (docs/adr/0061-volumes.md, "Compose and
// stacks"; the operator guide's Volumes and Stacks sections). The file's
// top-level volumes are jaco volumes of the local driver: the one a stack
// calls db-data is the cluster volume STACK_db-data, as Docker names it,
// unless name: gives another name or external: true names one that must
// exist already. The deploy creates the stack's own volumes, labelled as
// the stack's and with the file's driver options, before the services
// that mount them; so the volume the manager would otherwise create
// implicitly for a service (without labels) is never needed.

// Volume is a named volume the stack's services mount.
type Volume struct {
	Name string
	// Options are the local driver's (type, device, o), as the file's
	// driver_opts; Labels the file's labels. The deploy adds
	// NamespaceLabel to a volume it creates.
	Options map[string]string `json:",omitempty"`
	Labels  map[string]string `json:",omitempty"`
	// External volumes exist already; the stack neither creates nor
	// removes them.
	External bool `json:",omitempty"`
}

// volumeMount maps a mount of type volume: a named volume by its jaco
// name, with the options of a volume the stack declares (the manager
// checks them against the volume it finds); an anonymous one (no source)
// as it is, a directory of the replica's own. volume.nocopy is the
// mount's volume_no_copy: a new, empty volume is then not filled with
// what the image holds at the target, which it is otherwise, as Docker's
// (copy-up, docs/adr/0061-volumes.md).
func (t *translator) volumeMount(v types.ServiceVolumeConfig) *api.Mount {
	m := &api.Mount{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: v.Target, Readonly: v.ReadOnly,
		VolumeNoCopy: v.Volume != nil && v.Volume.NoCopy}
	if v.Source == "" {
		return m
	}
	if t.usedVolumes == nil {
		t.usedVolumes = map[string]bool{}
	}
	t.usedVolumes[v.Source] = true
	m.Source = t.volumeName(v.Source)
	if vc, ok := t.p.Volumes[v.Source]; ok && !bool(vc.External) && len(vc.DriverOpts) > 0 {
		m.VolumeOptions = maps.Clone(map[string]string(vc.DriverOpts))
	}
	return m
}

// volumeName is the jaco name of the volume the file calls key.
func (t *translator) volumeName(key string) string {
	vc, ok := t.p.Volumes[key]
	switch {
	case ok && vc.Name != "":
		// compose-go has written PROJECT_key (the stack's name) unless
		// the file gave one, and key for an external volume without.
		return vc.Name
	case ok && bool(vc.External):
		return key
	}
	return Name(t.stack, key)
}

// stackVolumes checks every top-level volume and returns, sorted by name,
// those the deployed services mount: a volume only a service left out by
// its profiles mounts is neither created nor looked for. Keys jaco cannot
// honour are refused (t.refuse); mistakes in values are the error.
func (t *translator) stackVolumes() ([]Volume, error) {
	var errs valueErrors
	byName := map[string]Volume{}
	keyOf := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(t.p.Volumes)) {
		vc := t.p.Volumes[key]
		at := "volumes." + key
		switch vc.Driver {
		case "", api.LocalVolumeDriver:
		default:
			t.refuse(at+".driver", vc.Driver+"; jaco volumes are "+api.LocalVolumeDriver)
		}
		vol := Volume{Name: t.volumeName(key), External: bool(vc.External)}
		// The manager's rule (api.CheckVolumeName), checked here so that
		// a bad name: is refused before the deploy writes anything.
		if api.CheckVolumeName(vol.Name) != nil {
			errs = append(errs, fmt.Errorf("%s.name: %q: use 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", at, vol.Name))
			continue
		}
		if vol.External {
			// As docker stack deploy: an external volume is the one
			// that exists, its options and labels are its own.
			if vc.Driver != "" || len(vc.DriverOpts) > 0 || len(vc.Labels) > 0 {
				errs = append(errs, fmt.Errorf("%s: an external volume takes only name; its driver, driver_opts and labels are those it was created with", at))
				continue
			}
		} else {
			if err := t.volumeOptions(at, vc.DriverOpts); err != nil {
				errs = append(errs, err)
				continue
			}
			if len(vc.DriverOpts) > 0 {
				vol.Options = maps.Clone(map[string]string(vc.DriverOpts))
			}
			if len(vc.Labels) > 0 {
				vol.Labels = maps.Clone(map[string]string(vc.Labels))
			}
		}
		if !t.usedVolumes[key] {
			continue
		}
		if prev, ok := byName[vol.Name]; ok && !sameVolume(prev, vol) {
			errs = append(errs, fmt.Errorf("volumes.%s and volumes.%s: both name the volume %s, differently", keyOf[vol.Name], key, vol.Name))
			continue
		}
		byName[vol.Name], keyOf[vol.Name] = vol, key
	}
	var out []Volume
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	if len(errs) > 0 {
		return out, errs
	}
	return out, nil
}

// volumeOptions checks driver_opts as the local driver (and the manager,
// api.CheckVolumeOptions) reads them. The loader has refused keys other
// than type, device and o; a file system type jaco cannot mount yet is
// refused by key, other mistakes (a relative device, type=none without
// o=bind) are errors.
func (t *translator) volumeOptions(at string, opts types.Options) error {
	switch typ := opts[api.VolumeOptType]; typ {
	case "", api.VolumeTypeTmpfs, api.VolumeTypeNone:
	default:
		t.refuse(at+".driver_opts.type", typ+"; the local driver takes tmpfs, or none with o=bind and device; other file systems come later")
		return nil
	}
	if err := api.CheckVolumeOptions(opts); err != nil {
		return fmt.Errorf("%s.driver_opts: %w", at, err)
	}
	return nil
}

func sameVolume(a, b Volume) bool {
	return a.Name == b.Name && a.External == b.External && maps.Equal(a.Options, b.Options) && maps.Equal(a.Labels, b.Labels)
}
