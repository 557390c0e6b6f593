package controlapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/spectemplate"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Volumes (docs/adr/0061-volumes.md): a Volume is created by `jaco volume
// create` or, as Docker's local driver does on first use, by the write of
// the first service naming it; it lives on the node the scheduler places
// its first replica on, and is removed only by `jaco volume rm`, once no
// service names it and no replica uses it.

// maxVolumes bounds the volumes of a cluster: each is a small object,
// but every volume mount of every spec is looked up among them.
const maxVolumes = 10000

// CreateVolume records a volume; its name is unique among volumes. It
// lives nowhere until a replica using it is placed.
func (s *Server) CreateVolume(ctx context.Context, req *api.CreateVolumeRequest) (*api.CreateVolumeResponse, error) {
	spec, err := volumeSpec(req.GetSpec())
	if err != nil {
		return nil, err
	}
	id, err := identity.NewID()
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	err = s.update(ctx, func(tx *store.Tx) error {
		if tx.FindVolumeByName(spec.Name) != nil {
			return reason.Error(codes.AlreadyExists, reason.AlreadyExists, "a volume named %s exists already", spec.Name)
		}
		return createVolumeTx(tx, &api.Volume{Id: id, Meta: &api.Meta{}, Spec: spec})
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	var stored *api.Volume
	s.store.View(func(tx store.ReadTx) { stored = tx.GetVolume(id) })
	return &api.CreateVolumeResponse{Volume: stored}, nil
}

// volumeSpec checks a spec sent to CreateVolume and returns the one to
// store: its driver spelled out.
func volumeSpec(spec *api.VolumeSpec) (*api.VolumeSpec, error) {
	if spec == nil {
		return nil, invalid("no volume spec")
	}
	if err := checkName("volume", spec.Name); err != nil {
		return nil, err
	}
	out := proto.CloneOf(spec)
	switch out.Driver {
	case "":
		out.Driver = api.LocalVolumeDriver
	case api.LocalVolumeDriver:
	default:
		return nil, invalid("volume %s: driver %q: the only driver is %s", spec.Name, spec.Driver, api.LocalVolumeDriver)
	}
	if err := api.CheckVolumeOptions(out.Options); err != nil {
		return nil, invalid("volume %s: %v", spec.Name, err)
	}
	if err := checkLabels(out.Labels); err != nil {
		return nil, err
	}
	return out, nil
}

// createVolumeTx records vol, within the cluster's bound on volumes.
func createVolumeTx(tx *store.Tx, vol *api.Volume) error {
	n := 0
	tx.ScanVolumes("", func(*api.Volume) bool { n++; return n < maxVolumes })
	if n >= maxVolumes {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"volume %s: the cluster holds %d volumes, the limit", vol.GetSpec().GetName(), n)
	}
	return tx.Create(vol)
}

// GetVolume returns a volume, the services naming it and the name of the
// node it lives on.
func (s *Server) GetVolume(_ context.Context, req *api.GetVolumeRequest) (*api.GetVolumeResponse, error) {
	resp := &api.GetVolumeResponse{}
	s.store.View(func(tx store.ReadTx) {
		if resp.Volume = findVolume(tx, req.GetVolume()); resp.Volume != nil {
			resp.Services = volumeUsers(tx, resp.Volume, true)
			if n := tx.GetNode(resp.Volume.GetNodeId()); n != nil {
				resp.Hostname = placement.Hostname(n)
			}
		}
	})
	if resp.Volume == nil {
		return nil, notFound("volume", req.GetVolume())
	}
	return resp, nil
}

// ListVolumes lists one page of the volumes in the local store, in id
// order.
func (s *Server) ListVolumes(_ context.Context, req *api.ListVolumesRequest) (*api.ListVolumesResponse, error) {
	after, err := paging.After(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	page := paging.NewPage[*api.Volume](req.GetPageSize())
	s.store.View(func(tx store.ReadTx) {
		tx.ScanVolumes(after, func(v *api.Volume) bool { return page.Add(v.GetId(), v) })
	})
	return &api.ListVolumesResponse{Volumes: page.Items, NextPageToken: page.NextToken()}, nil
}

// RemoveVolume deletes a volume no service names (in its spec or the spec
// it would roll back to) and no replica not yet ended uses. A volume that
// lived on a node is added to that node's removed_volumes in the same
// write, which is how its agent learns to delete the directory.
func (s *Server) RemoveVolume(ctx context.Context, req *api.RemoveVolumeRequest) (*api.RemoveVolumeResponse, error) {
	err := s.update(ctx, func(tx *store.Tx) error {
		vol := findVolume(tx, req.GetVolume())
		if vol == nil {
			return notFound("volume", req.GetVolume())
		}
		name := vol.GetSpec().GetName()
		if users := volumeUsers(tx, vol, true); len(users) > 0 {
			return reason.Error(codes.FailedPrecondition, reason.VolumeInUse,
				"volume %s is used by services %s: remove them or update them off it first", name, strings.Join(users, ", "))
		}
		if replicas := volumeReplicas(tx, vol); len(replicas) > 0 {
			return reason.Error(codes.FailedPrecondition, reason.VolumeInUse,
				"volume %s is used by replicas that have not ended yet (%s): wait for them to stop", name, strings.Join(replicas, ", "))
		}
		if m := vol.GetMove(); m != nil {
			// Both nodes hold a copy until the move ends; a removal now
			// would reach only one of them (docs/adr/0064-volume-move.md).
			return reason.Error(codes.FailedPrecondition, reason.VolumeInUse,
				"volume %s is moving from node %s to node %s: wait for the move to end", name, m.GetFromNode(), m.GetToNode())
		}
		if err := tx.Delete(vol); err != nil {
			return err
		}
		n := tx.GetNode(vol.GetNodeId())
		if n == nil {
			return nil // never placed, or its node was removed
		}
		n.RemovedVolumes = append(n.RemovedVolumes, &api.VolumeRef{Id: vol.GetId(), Name: name, Generation: vol.GetGeneration()})
		if extra := len(n.RemovedVolumes) - api.MaxRemovedVolumes; extra > 0 {
			n.RemovedVolumes = slices.Delete(n.RemovedVolumes, 0, extra)
		}
		return tx.Update(n)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.RemoveVolumeResponse{}, nil
}

// findVolume resolves a volume's id, or else its name.
func findVolume(tx store.ReadTx, idOrName string) *api.Volume {
	if v := tx.GetVolume(idOrName); v != nil {
		return v
	}
	return tx.FindVolumeByName(idOrName)
}

// volumeUsers names the services whose spec mounts vol (and, with
// previous, those whose previous spec does), sorted: by its name, or by a
// per-slot source that expands to it for a slot the service has
// (slotVolumeUser).
func volumeUsers(tx store.ReadTx, vol *api.Volume, previous bool) []string {
	name := vol.GetSpec().GetName()
	var users []string
	for _, svc := range tx.ListServices() {
		if slices.Contains(api.VolumeNames(svc.GetSpec()), name) || slotVolumeUser(tx, svc.GetId(), svc.GetSpec(), vol) ||
			previous && (slices.Contains(api.VolumeNames(svc.GetPreviousSpec()), name) || slotVolumeUser(tx, svc.GetId(), svc.GetPreviousSpec(), vol)) {
			users = append(users, svc.GetSpec().GetName())
		}
	}
	slices.Sort(users)
	return users
}

// volumeReplicas names (up to 10) the replicas mounting vol that have
// not ended: a removed service's replicas may still be stopping, and
// their container still holds the directory. A replica of a per-slot
// volume's slot uses it, assigned or still pending (taskSlotVolumes).
func volumeReplicas(tx store.ReadTx, vol *api.Volume) []string {
	name := vol.GetSpec().GetName()
	var out []string
	tx.EachTask("", "", func(t *api.Task) bool {
		if t.GetStatus().GetState() > api.TaskState_TASK_STATE_RUNNING {
			return true
		}
		if slices.Contains(api.VolumeNames(t.GetSpec()), name) || slices.Contains(taskSlotVolumes(t), name) {
			out = append(out, api.ReplicaName(t, t.GetNodeId()))
		}
		return len(out) < 10
	})
	return out
}

// validateVolumeMount checks what a mount of spec says of volumes: a
// volume mount's source is a volume name, a per-slot template of one
// (spectemplate.CheckVolumeSource), or empty (an anonymous volume), its
// options the local driver's; other mounts carry no volume fields.
func validateVolumeMount(spec *api.ServiceSpec, m *api.Mount) error {
	if !api.IsVolumeMount(m) {
		if len(m.VolumeOptions) > 0 || m.VolumeId != "" || m.VolumeNoCopy {
			return invalid("mount at %s: volume options (volume-opt, volume-nocopy) are a volume mount's", m.Target)
		}
		return nil
	}
	// A template names one volume per slot (db-{{.Task.Slot}}); checked
	// before the name, which would refuse it less helpfully.
	if api.IsSlotVolumeMount(m) {
		if err := spectemplate.CheckVolumeSource(spec, m.Source); err != nil {
			return invalid("volume mount at %s: %v", m.Target, err)
		}
	} else if m.Source != "" {
		if err := checkName("volume", m.Source); err != nil {
			return err
		}
	}
	if m.TmpfsSizeBytes != 0 || m.TmpfsMode != 0 {
		return invalid("volume mount %s:%s: tmpfs size and mode are a tmpfs mount's (give a tmpfs volume type=tmpfs,o=size=...)", m.Source, m.Target)
	}
	if m.CreateHostPath {
		return invalid("volume mount %s:%s: create_host_path is a bind mount's", m.Source, m.Target)
	}
	if err := api.CheckVolumeOptions(m.VolumeOptions); err != nil {
		return invalid("volume mount %s:%s: %v", m.Source, m.Target, err)
	}
	return nil
}

// ensureVolumes creates, in tx, each volume spec names that does not
// exist yet, as Docker's local driver does on first use, recording the
// service that asked for it; and fills every named volume mount with its
// volume's id and options, so that the agent reads them from the spec. A
// mount whose options differ from an existing volume's is refused: the
// volume is not what the spec expects (Swarm would mount it silently).
func ensureVolumes(tx *store.Tx, spec *api.ServiceSpec) error {
	for _, m := range spec.GetMounts() {
		if api.IsSlotVolumeMount(m) {
			// The scheduler creates and finds each slot's volume and
			// tells the agent in the task (docs/adr/0061-volumes.md).
			m.VolumeId = ""
			continue
		}
		if !api.IsVolumeMount(m) || m.Source == "" {
			continue
		}
		vol := tx.FindVolumeByName(m.Source)
		if vol == nil {
			id, err := identity.NewID()
			if err != nil {
				return fmt.Errorf("volume %s: %w", m.Source, err)
			}
			vol = &api.Volume{Id: id, Meta: &api.Meta{}, CreatedByService: spec.GetName(), Spec: &api.VolumeSpec{
				Name: m.Source, Driver: api.LocalVolumeDriver, Options: maps.Clone(m.VolumeOptions),
			}}
			if err := createVolumeTx(tx, vol); err != nil {
				return err
			}
		} else if len(m.VolumeOptions) > 0 && !maps.Equal(m.VolumeOptions, vol.GetSpec().GetOptions()) {
			return invalid("service %s: volume %s exists with other options (%s) than the mount at %s gives (%s): leave volume-opt out, or name another volume",
				spec.GetName(), m.Source, api.VolumeOptionWords(vol.GetSpec().GetOptions()), m.Target, api.VolumeOptionWords(m.VolumeOptions))
		}
		m.VolumeId = vol.GetId()
		m.VolumeOptions = maps.Clone(vol.GetSpec().GetOptions())
	}
	return nil
}
