package controlapi

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
)

// CreateService records a new service; the orchestrators see it in the
// store and create its replicas.
func (s *Server) CreateService(ctx context.Context, req *api.CreateServiceRequest) (*api.CreateServiceResponse, error) {
	if err := validateSpec(req.Spec); err != nil {
		return nil, err
	}
	id, err := identity.NewID()
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	svc := &api.Service{Id: id, Meta: &api.Meta{}, Spec: req.Spec, SpecVersion: 1, JobStatus: newJobStatus(req.Spec)}
	err = s.update(ctx, func(tx *store.Tx) error { return createServiceTx(tx, svc) })
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.CreateServiceResponse{Service: withoutRegistryAuth(s.service(svc.Id))}, nil
}

// createServiceTx records svc, whose spec validateSpec passed, in tx
// after the checks against the store; DeployStack runs it for each new
// service of a stack, in the same write (docs/adr/0062-atomic-stack-deploy.md).
func createServiceTx(tx *store.Tx, svc *api.Service) error {
	spec := svc.Spec
	if tx.FindServiceByName(spec.Name) != nil {
		return reason.Error(codes.AlreadyExists, reason.InvalidSpec, "a service named %s exists already", spec.Name)
	}
	if err := checkReferences(tx, spec); err != nil {
		return err
	}
	if err := checkLimits(tx, spec, nil); err != nil {
		return err
	}
	if err := ensureIngress(tx, spec); err != nil {
		return err
	}
	if err := ensureVolumes(tx, spec); err != nil {
		return err
	}
	return tx.Create(svc)
}

// UpdateService replaces a service's spec, or returns it to its previous
// spec (req.rollback). A change that replaces replicas bumps spec_version,
// keeps the spec it replaces as previous_spec and starts an update, which
// the orchestrator rolls out under the spec's policy. The same spec sent
// again resumes a paused update.
func (s *Server) UpdateService(ctx context.Context, req *api.UpdateServiceRequest) (*api.UpdateServiceResponse, error) {
	if req.Rollback {
		if req.Spec != nil {
			return nil, invalid("a rollback returns to the previous spec: send no spec with it")
		}
	} else if err := validateSpec(req.Spec); err != nil {
		return nil, err
	}
	var id string
	err := s.update(ctx, func(tx *store.Tx) error {
		var err error
		id, err = updateServiceTx(tx, req)
		return err
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.UpdateServiceResponse{Service: withoutRegistryAuth(s.service(id))}, nil
}

// updateServiceTx records in tx the change req asks for (its spec, when
// not a rollback, passed validateSpec) and returns the service's id;
// DeployStack runs it for each changed service of a stack, in the same
// write (docs/adr/0062-atomic-stack-deploy.md).
func updateServiceTx(tx *store.Tx, req *api.UpdateServiceRequest) (string, error) {
	svc := findService(tx, req.Service)
	if svc == nil {
		return "", notFound("service", req.Service)
	}
	if req.Version != 0 && req.Version != svc.Meta.GetVersion() {
		return svc.Id, reason.Error(codes.Aborted, reason.VersionConflict,
			"service %s changed since version %d (now %d); read it again", svc.Spec.Name, req.Version, svc.Meta.GetVersion())
	}
	if req.Rollback {
		return svc.Id, rollBack(tx, svc)
	}
	if req.Spec.Name != svc.Spec.Name {
		return svc.Id, invalid("a service cannot be renamed (%s to %s)", svc.Spec.Name, req.Spec.Name)
	}
	if api.ModeWord(req.Spec.Mode) != api.ModeWord(svc.Spec.Mode) {
		return svc.Id, invalid("a service's mode cannot change (%s to %s): remove it and create it again",
			api.ModeWord(svc.Spec.Mode), api.ModeWord(req.Spec.Mode))
	}
	keepRegistryAuth(req.Spec, svc.Spec)
	if proto.Equal(req.Spec, svc.Spec) {
		return svc.Id, resume(tx, svc)
	}
	if err := checkReferences(tx, req.Spec); err != nil {
		return svc.Id, err
	}
	if err := checkLimits(tx, req.Spec, svc.Spec); err != nil {
		return svc.Id, err
	}
	if err := ensureIngress(tx, req.Spec); err != nil {
		return svc.Id, err
	}
	if err := ensureVolumes(tx, req.Spec); err != nil {
		return svc.Id, err
	}
	if rollout.Replaces(svc.Spec, req.Spec) {
		svc.PreviousSpec = svc.Spec
		svc.SpecVersion++
		svc.UpdateStatus = updateStatus(api.UpdateState_UPDATE_STATE_UPDATING, "update in progress")
	}
	nextJobIteration(svc)
	svc.Spec = req.Spec
	return svc.Id, tx.Update(svc)
}

// rollBack swaps svc's spec with its previous one and starts a rollback
// under the rollback policy; a second rollback returns to the spec the
// first left.
func rollBack(tx *store.Tx, svc *api.Service) error {
	prev := svc.PreviousSpec
	if prev == nil {
		return reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"service %s has no previous spec to roll back to", svc.Spec.Name)
	}
	if err := checkReferences(tx, prev); err != nil {
		return err
	}
	if err := checkLimits(tx, prev, svc.Spec); err != nil {
		return err
	}
	if err := ensureIngress(tx, prev); err != nil {
		return err
	}
	if err := ensureVolumes(tx, prev); err != nil {
		return err
	}
	svc.PreviousSpec, svc.Spec = svc.Spec, prev
	svc.SpecVersion++
	svc.UpdateStatus = updateStatus(api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED, "rollback requested")
	nextJobIteration(svc)
	return tx.Update(svc)
}

// resume restarts a paused update or rollback where it stopped: failures
// before now no longer count. Anything else is left as it is.
func resume(tx *store.Tx, svc *api.Service) error {
	switch svc.UpdateStatus.GetState() {
	case api.UpdateState_UPDATE_STATE_PAUSED:
		svc.UpdateStatus = updateStatus(api.UpdateState_UPDATE_STATE_UPDATING, "update resumed")
	case api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED:
		svc.UpdateStatus = updateStatus(api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED, "rollback resumed")
	default:
		return nil
	}
	return tx.Update(svc)
}

// updateStatus is the status of an update starting now. The leader's
// clock stamps it, as it stamps the tasks whose failures it counts.
func updateStatus(state api.UpdateState, msg string) *api.UpdateStatus {
	return &api.UpdateStatus{State: state, StartedAt: timestamppb.Now(), Message: msg}
}

// RemoveService deletes a service; the orchestrator stops its replicas.
// A service others depend on stays until they are gone or changed.
func (s *Server) RemoveService(ctx context.Context, req *api.RemoveServiceRequest) (*api.RemoveServiceResponse, error) {
	err := s.update(ctx, func(tx *store.Tx) error {
		svc := findService(tx, req.Service)
		if svc == nil {
			return notFound("service", req.Service)
		}
		return removeServiceTx(tx, svc)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.RemoveServiceResponse{}, nil
}

// removeServiceTx records the removal of svc in tx, refused while another
// service depends on it; DeployStack's prune runs it in the deploy's write.
func removeServiceTx(tx *store.Tx, svc *api.Service) error {
	var dependents []string
	for _, o := range tx.ListServices() {
		if slices.Contains(o.Spec.DependsOn, svc.Spec.Name) {
			dependents = append(dependents, o.Spec.Name)
		}
	}
	if len(dependents) > 0 {
		return reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
			"service %s is a dependency of %s; remove or change those first", svc.Spec.Name, strings.Join(dependents, ", "))
	}
	return tx.Delete(svc)
}

// GetService finds a service by id or name in the local store.
func (s *Server) GetService(_ context.Context, req *api.GetServiceRequest) (*api.GetServiceResponse, error) {
	var svc *api.Service
	s.store.View(func(tx store.ReadTx) { svc = findService(tx, req.Service) })
	if svc == nil {
		return nil, notFound("service", req.Service)
	}
	return &api.GetServiceResponse{Service: withoutRegistryAuth(svc)}, nil
}

// ListServices lists one page of the services in the local store, in id
// order.
func (s *Server) ListServices(_ context.Context, req *api.ListServicesRequest) (*api.ListServicesResponse, error) {
	after, err := paging.After(req.PageToken)
	if err != nil {
		return nil, err
	}
	page := paging.NewPage[*api.Service](req.PageSize)
	var counts []*api.ReplicaCount
	s.store.View(func(tx store.ReadTx) {
		tx.ScanServices(after, func(svc *api.Service) bool { return page.Add(svc.Id, withoutRegistryAuth(svc)) })
		for _, svc := range page.Items {
			counts = append(counts, countReplicas(tx, svc.Id, ""))
		}
	})
	return &api.ListServicesResponse{Services: page.Items, NextPageToken: page.NextToken(), Counts: counts}, nil
}

// ListTasks lists one page of the replicas in the local store, in id
// order, narrowed to a service and a node when named.
func (s *Server) ListTasks(_ context.Context, req *api.ListTasksRequest) (*api.ListTasksResponse, error) {
	after, err := paging.After(req.PageToken)
	if err != nil {
		return nil, err
	}
	page := paging.NewPage[*api.Task](req.PageSize)
	s.store.View(func(tx store.ReadTx) {
		var svcID, nodeID string
		if req.Service != "" {
			svc := findService(tx, req.Service)
			if svc == nil {
				err = notFound("service", req.Service)
				return
			}
			svcID = svc.Id
		}
		if req.Node != "" {
			n := FindNode(tx, req.Node)
			if n == nil {
				err = notFound("node", req.Node)
				return
			}
			nodeID = n.Id
		}
		tx.ScanTasks(after, svcID, nodeID, func(t *api.Task) bool { return page.Add(t.Id, taskWithoutRegistryAuth(t)) })
	})
	if err != nil {
		return nil, err
	}
	return &api.ListTasksResponse{Tasks: page.Items, NextPageToken: page.NextToken()}, nil
}

// findService resolves what an operator typed for a service: an id, or
// else a name.
func findService(tx store.ReadTx, idOrName string) *api.Service {
	if svc := tx.GetService(idOrName); svc != nil {
		return svc
	}
	return tx.FindServiceByName(idOrName)
}

func (s *Server) service(id string) *api.Service {
	var svc *api.Service
	s.store.View(func(tx store.ReadTx) { svc = tx.GetService(id) })
	return svc
}

func notFound(kind, name string) error {
	return reason.Error(codes.NotFound, reason.NotFound, "no %s with id or name %q", kind, name)
}
