package containerd

import (
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
)

// Volume mounts (docs/adr/0061-volumes.md): a named volume is a bind of
// its directory under the node's volumes dir (agent/volumes), made on
// first use and kept when the replica goes; an anonymous one (no source)
// a bind of a directory in the replica's own state dir, gone with it.

// WithVolumesDir sets the node's volumes dir (jacod --volumes-dir). Without
// it, a replica mounting a named volume fails to prepare.
func WithVolumesDir(dir string) Option { return func(o *options) { o.volumesDir = dir } }

// resolveVolumes returns mounts with each volume mount made into what the
// container mounts (a bind of the volume's node path, or a tmpfs), making
// the volume's directory if missing; nil when mounts hold no volume, so
// the spec's own are used. The hooks runtime resolves them with the same
// code (volumes.Dir.Mounts), so a volume is the same directory whichever
// runtime mounts it.
func (c *controller) resolveVolumes(mounts []*api.Mount) ([]*api.Mount, error) {
	// The directories a replica may own are for a runtime without an
	// image (hook bundles): a container's volume gets what copy-up gives.
	out, _, err := volumes.Dir(c.rt.volumesDir).Mounts(c.rep.Dir, mounts)
	return out, err
}

// mountsOf are the mounts the container gets: the spec's, with volume
// mounts resolved when prepareOptions resolved them.
func (f nodeFiles) mountsOf(spec *api.ServiceSpec) []*api.Mount {
	if f.volumeMounts != nil {
		return f.volumeMounts
	}
	return spec.GetMounts()
}
