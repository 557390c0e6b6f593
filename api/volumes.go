package api

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Volumes (docs/adr/0061-volumes.md): what the manager, the scheduler and
// the agent read the same way.

// LocalVolumeDriver is the one volume driver: a directory (or a tmpfs, or
// a bind of a node path) on the node the volume lives on.
const LocalVolumeDriver = "local"

// MaxRemovedVolumes bounds Node.removed_volumes: the newest removals the
// node's agent is told of. A node away through more removals than that
// keeps the older ones' directories (never data it still needs).
const MaxRemovedVolumes = 100

// The local driver's option keys and types, as Docker's.
const (
	VolumeOptType   = "type"
	VolumeOptDevice = "device"
	VolumeOptO      = "o"

	VolumeTypeTmpfs = "tmpfs"
	VolumeTypeNone  = "none"
)

// volumeMountOption is one word of an o= list: name or name=value, as
// mount(8) takes them.
var volumeMountOption = regexp.MustCompile(`^[A-Za-z0-9_.:-]+(=[A-Za-z0-9_.:/-]+)?$`)

// CheckVolumeOptions refuses local driver options the agent could not
// honour: keys other than type, device and o; a type other than tmpfs
// and none (a bind of device, which must then be an absolute path on the
// node, with o naming bind); an o list of other than mount(8) words.
func CheckVolumeOptions(opts map[string]string) error {
	for k := range opts {
		if k != VolumeOptType && k != VolumeOptDevice && k != VolumeOptO {
			return fmt.Errorf("volume option %q: the local driver takes type, device and o", k)
		}
	}
	o := opts[VolumeOptO]
	words := VolumeMountOptions(o)
	for _, w := range words {
		if !volumeMountOption.MatchString(w) {
			return fmt.Errorf("volume option o=%q: %q is not a mount option (name or name=value)", o, w)
		}
	}
	switch t, dev := opts[VolumeOptType], opts[VolumeOptDevice]; t {
	case "":
		if dev != "" || o != "" {
			return fmt.Errorf("volume options device and o need a type (tmpfs, or none for a bind of device)")
		}
	case VolumeTypeTmpfs:
		if dev != "" && dev != VolumeTypeTmpfs {
			return fmt.Errorf("volume option device=%q: a tmpfs has no device (leave it out, or tmpfs)", dev)
		}
		if slices.ContainsFunc(words, func(w string) bool { return w == "bind" || w == "rbind" }) {
			return fmt.Errorf("volume option o=%q: bind is for type=none", o)
		}
	case VolumeTypeNone:
		if !path.IsAbs(dev) || path.Clean(dev) != dev {
			return fmt.Errorf("volume option device=%q: type=none binds a clean absolute path of the node", dev)
		}
		if !slices.ContainsFunc(words, func(w string) bool { return w == "bind" || w == "rbind" }) {
			return fmt.Errorf("volume option o=%q: type=none needs o=bind", o)
		}
	default:
		return fmt.Errorf("volume option type=%q: the local driver takes tmpfs, or none (a bind of device); other file systems come later", t)
	}
	return nil
}

// VolumeMountOptions are the words of an o= option, empty ones left out.
func VolumeMountOptions(o string) []string {
	var out []string
	for w := range strings.SplitSeq(o, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// IsVolumeMount reports whether m is a volume mount, named or anonymous.
func IsVolumeMount(m *Mount) bool { return m.GetType() == MountType_MOUNT_TYPE_VOLUME }

// VolumeNames are the named volumes spec mounts, each once, in mount
// order; anonymous volumes (no source) are not named, nor are per-slot
// volumes (a template source, IsSlotVolumeMount), whose names are a
// replica's (spectemplate.TaskVolumeSource).
func VolumeNames(spec *ServiceSpec) []string {
	var names []string
	for _, m := range spec.GetMounts() {
		if IsVolumeMount(m) && m.GetSource() != "" && !IsSlotVolumeMount(m) && !slices.Contains(names, m.GetSource()) {
			names = append(names, m.GetSource())
		}
	}
	return names
}

// IsSlotVolumeMount reports whether m is a per-slot volume mount: its
// source a template (db-{{.Task.Slot}}) the scheduler expands for each
// replica (docs/adr/0061-volumes.md).
func IsSlotVolumeMount(m *Mount) bool {
	return IsVolumeMount(m) && strings.Contains(m.GetSource(), "{{")
}

// HasSlotVolumes reports whether spec mounts a per-slot volume.
func HasSlotVolumes(spec *ServiceSpec) bool {
	return slices.ContainsFunc(spec.GetMounts(), IsSlotVolumeMount)
}

// volumeName is the rule of volume names, the manager's rule of service
// names: a name is a directory of the node's volumes dir, so no '/'.
var volumeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// CheckVolumeName refuses what is not a volume name: what a per-slot
// volume mount's source expands to must be one.
func CheckVolumeName(name string) error {
	if !volumeName.MatchString(name) {
		return fmt.Errorf("volume name %q: use 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// VolumeMoveProgress is a volume copy's progress as the pending message
// and the drain say it: "copied 12.0 MiB of 200.0 MiB"
// (docs/adr/0064-volume-move.md).
func VolumeMoveProgress(m *VolumeMove) string {
	if m.GetBytesTotal() == 0 && m.GetBytesDone() == 0 {
		return "copying"
	}
	return fmt.Sprintf("copied %.1f MiB of %.1f MiB", float64(m.GetBytesDone())/(1<<20), float64(m.GetBytesTotal())/(1<<20))
}
