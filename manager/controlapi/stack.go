package controlapi

import (
	"context"
	"fmt"
	"net/netip"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
)

// DeployStack applies a whole stack in one store write, so that a refusal
// of any part leaves the cluster as it was (docs/adr/0062-atomic-stack-deploy.md).
// Each part is checked by the code its own call runs (CreateNetwork,
// CreateSecret, CreateConfig, CreateVolume, CreateService, UpdateService,
// RemoveService): the checks of a spec alone first, for every part, then
// the checks against the store inside the one transaction, part after
// part, each seeing what the parts before it recorded.
func (s *Server) DeployStack(ctx context.Context, req *api.DeployStackRequest) (*api.DeployStackResponse, error) {
	plan, err := planStack(req)
	if err != nil {
		return nil, err
	}
	var resp *api.DeployStackResponse
	var created, updated []string // service ids, in the request's order
	err = s.update(ctx, func(tx *store.Tx) error {
		// A retry after a write conflict starts afresh.
		resp, created, updated = &api.DeployStackResponse{}, nil, nil
		return plan.apply(tx, resp, &created, &updated)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	for _, id := range created {
		resp.Created = append(resp.Created, withoutRegistryAuth(s.service(id)))
	}
	for _, id := range updated {
		resp.Updated = append(resp.Updated, withoutRegistryAuth(s.service(id)))
	}
	return resp, nil
}

// stackPlan is a DeployStackRequest whose parts passed the checks of a
// spec alone.
type stackPlan struct {
	req *api.DeployStackRequest
	// subnets are the subnets the networks ask for, by index.
	subnets []netip.Prefix
	// volumes are the volume specs as CreateVolume would store them.
	volumes []*api.VolumeSpec
}

// planStack runs the checks each part's own call makes before its write,
// and refuses a name given twice within a kind: the second would meet
// the first as "exists already" in the write, or be skipped silently.
func planStack(req *api.DeployStackRequest) (*stackPlan, error) {
	if req.GetStack() == "" {
		return nil, invalid("a stack deploy names its stack")
	}
	p := &stackPlan{req: req}
	names := map[string]bool{}
	once := func(kind, name string) error {
		if names[kind+"/"+name] {
			return invalid("stack %s: %s %s is given twice", req.GetStack(), kind, name)
		}
		names[kind+"/"+name] = true
		return nil
	}
	for _, n := range req.GetNetworks() {
		asked, err := checkNetworkSpec(n)
		if err != nil {
			return nil, err
		}
		if err := once("network", n.GetName()); err != nil {
			return nil, err
		}
		p.subnets = append(p.subnets, asked)
	}
	for _, f := range req.GetSecrets() {
		if err := secretKind.check(f); err != nil {
			return nil, err
		}
		if err := once("secret", f.GetName()); err != nil {
			return nil, err
		}
	}
	for _, f := range req.GetConfigs() {
		if err := configKind.check(f); err != nil {
			return nil, err
		}
		if err := once("config", f.GetName()); err != nil {
			return nil, err
		}
	}
	for _, v := range req.GetVolumes() {
		spec, err := volumeSpec(v)
		if err != nil {
			return nil, err
		}
		if err := once("volume", spec.GetName()); err != nil {
			return nil, err
		}
		p.volumes = append(p.volumes, spec)
	}
	for _, svc := range req.GetServices() {
		if err := validateSpec(svc.GetSpec()); err != nil {
			return nil, err
		}
		if err := once("service", svc.GetSpec().GetName()); err != nil {
			return nil, err
		}
		if got := svc.GetSpec().GetLabels()[api.StackLabel]; got != req.GetStack() {
			return nil, invalid("service %s: a service of stack %s carries the label %s=%s", svc.GetSpec().GetName(), req.GetStack(), api.StackLabel, req.GetStack())
		}
	}
	for _, r := range req.GetRemove() {
		if r.GetService() == "" {
			return nil, invalid("stack %s: a removal names no service", req.GetStack())
		}
	}
	return p, nil
}

// apply records the plan in tx, in the request's order: networks,
// secrets, configs, volumes, then services, then removals. It fills in
// resp's names and the ids of the services created and updated.
func (p *stackPlan) apply(tx *store.Tx, resp *api.DeployStackResponse, created, updated *[]string) error {
	req := p.req
	for i, n := range req.GetNetworks() {
		if tx.FindNetworkByName(n.GetName()) != nil {
			continue
		}
		id, err := identity.NewID()
		if err != nil {
			return fmt.Errorf("network %s: %w", n.GetName(), err)
		}
		if _, err := createNetworkTx(tx, id, &api.NetworkSpec{Name: n.GetName(), Labels: n.GetLabels()}, p.subnets[i]); err != nil {
			return err
		}
		resp.CreatedNetworks = append(resp.CreatedNetworks, n.GetName())
	}
	var err error
	if resp.CreatedSecrets, err = createFiles(tx, secretKind, req.GetSecrets()); err != nil {
		return err
	}
	if resp.CreatedConfigs, err = createFiles(tx, configKind, req.GetConfigs()); err != nil {
		return err
	}
	for _, spec := range p.volumes {
		if tx.FindVolumeByName(spec.GetName()) != nil {
			continue
		}
		id, err := identity.NewID()
		if err != nil {
			return fmt.Errorf("volume %s: %w", spec.GetName(), err)
		}
		if err := createVolumeTx(tx, &api.Volume{Id: id, Meta: &api.Meta{}, Spec: proto.CloneOf(spec)}); err != nil {
			return err
		}
		resp.CreatedVolumes = append(resp.CreatedVolumes, spec.GetName())
	}
	for _, svc := range req.GetServices() {
		spec := svc.GetSpec()
		// The volumes its mounts name (each once) that do not exist yet:
		// writing the service creates them (ensureVolumes).
		var missing []string
		for _, name := range api.VolumeNames(spec) {
			if tx.FindVolumeByName(name) == nil {
				missing = append(missing, name)
			}
		}
		if svc.GetVersion() == 0 {
			id, err := identity.NewID()
			if err != nil {
				return fmt.Errorf("service %s: %w", spec.GetName(), err)
			}
			if err := createServiceTx(tx, &api.Service{Id: id, Meta: &api.Meta{}, Spec: spec, SpecVersion: 1, JobStatus: newJobStatus(spec)}); err != nil {
				return err
			}
			*created = append(*created, id)
		} else {
			if err := ownedByStack(tx.FindServiceByName(spec.GetName()), spec.GetName(), req.GetStack()); err != nil {
				return err
			}
			id, err := updateServiceTx(tx, &api.UpdateServiceRequest{Service: spec.GetName(), Version: svc.GetVersion(), Spec: spec})
			if err != nil {
				return err
			}
			*updated = append(*updated, id)
		}
		resp.CreatedVolumes = append(resp.CreatedVolumes, missing...)
	}
	for _, r := range req.GetRemove() {
		stored := tx.GetService(r.GetService())
		if err := ownedByStack(stored, r.GetService(), req.GetStack()); err != nil {
			return err
		}
		if r.GetVersion() != 0 && r.GetVersion() != stored.GetMeta().GetVersion() {
			return reason.Error(codes.Aborted, reason.VersionConflict,
				"service %s changed since version %d (now %d); read it again", stored.GetSpec().GetName(), r.GetVersion(), stored.GetMeta().GetVersion())
		}
		if err := removeServiceTx(tx, stored); err != nil {
			return err
		}
		resp.Removed = append(resp.Removed, stored.GetSpec().GetName())
	}
	return nil
}

// ownedByStack refuses a service a deploy of stack would change that is
// missing or not labelled as the stack's: a deploy never takes another's
// service over (docs/operator-guide.md, Stacks).
func ownedByStack(svc *api.Service, name, stack string) error {
	if svc == nil {
		return notFound("service", name)
	}
	if got := svc.GetSpec().GetLabels()[api.StackLabel]; got != stack {
		return reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"service %s exists and is not part of stack %s (no label %s=%s)", svc.GetSpec().GetName(), stack, api.StackLabel, stack)
	}
	return nil
}

// createFiles records the secrets (configs) of specs whose name is free,
// and returns the names it recorded; those that exist are left as they
// are, being immutable.
func createFiles[T fileObject](tx *store.Tx, k fileKind[T], specs []*api.FileSpec) ([]string, error) {
	var names []string
	for _, spec := range specs {
		if !isNil(k.byName(tx, spec.GetName())) {
			continue
		}
		id, err := identity.NewID()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", k.word, spec.GetName(), err)
		}
		if err := tx.Create(k.newObj(id, proto.CloneOf(spec))); err != nil {
			return nil, err
		}
		names = append(names, spec.GetName())
	}
	return names, nil
}
