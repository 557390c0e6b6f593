package controlapi

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
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
	svc := &api.Service{Id: id, Meta: &api.Meta{}, Spec: req.Spec, SpecVersion: 1}
	err = s.update(ctx, func(tx *store.Tx) error {
		if tx.FindServiceByName(req.Spec.Name) != nil {
			return reason.Error(codes.AlreadyExists, reason.InvalidSpec, "a service named %s exists already", req.Spec.Name)
		}
		if err := checkReferences(tx, req.Spec); err != nil {
			return err
		}
		if err := checkLimits(tx, req.Spec, nil); err != nil {
			return err
		}
		return tx.Create(svc)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.CreateServiceResponse{Service: s.service(svc.Id)}, nil
}

// UpdateService replaces a service's spec. A changed spec bumps
// spec_version, which makes the orchestrator replace the replicas.
func (s *Server) UpdateService(ctx context.Context, req *api.UpdateServiceRequest) (*api.UpdateServiceResponse, error) {
	if err := validateSpec(req.Spec); err != nil {
		return nil, err
	}
	var id string
	err := s.update(ctx, func(tx *store.Tx) error {
		svc := findService(tx, req.Service)
		if svc == nil {
			return notFound("service", req.Service)
		}
		id = svc.Id
		if req.Version != 0 && req.Version != svc.Meta.GetVersion() {
			return reason.Error(codes.Aborted, reason.VersionConflict,
				"service %s changed since version %d (now %d); read it again", svc.Spec.Name, req.Version, svc.Meta.GetVersion())
		}
		if req.Spec.Name != svc.Spec.Name {
			return invalid("a service cannot be renamed (%s to %s)", svc.Spec.Name, req.Spec.Name)
		}
		if proto.Equal(req.Spec, svc.Spec) {
			return nil
		}
		if err := checkReferences(tx, req.Spec); err != nil {
			return err
		}
		if err := checkLimits(tx, req.Spec, svc.Spec); err != nil {
			return err
		}
		if !onlyScaled(svc.Spec, req.Spec) {
			svc.SpecVersion++
		}
		svc.Spec = req.Spec
		return tx.Update(svc)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.UpdateServiceResponse{Service: s.service(id)}, nil
}

// onlyScaled reports whether b differs from a in the replica count alone:
// scaling keeps the running replicas.
func onlyScaled(a, b *api.ServiceSpec) bool {
	a, b = proto.CloneOf(a), proto.CloneOf(b)
	a.Replicas, b.Replicas = 0, 0
	return proto.Equal(a, b)
}

// RemoveService deletes a service; the orchestrator stops its replicas.
// A service others depend on stays until they are gone or changed.
func (s *Server) RemoveService(ctx context.Context, req *api.RemoveServiceRequest) (*api.RemoveServiceResponse, error) {
	err := s.update(ctx, func(tx *store.Tx) error {
		svc := findService(tx, req.Service)
		if svc == nil {
			return notFound("service", req.Service)
		}
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
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.RemoveServiceResponse{}, nil
}

// GetService finds a service by id or name in the local store.
func (s *Server) GetService(_ context.Context, req *api.GetServiceRequest) (*api.GetServiceResponse, error) {
	var svc *api.Service
	s.store.View(func(tx store.ReadTx) { svc = findService(tx, req.Service) })
	if svc == nil {
		return nil, notFound("service", req.Service)
	}
	return &api.GetServiceResponse{Service: svc}, nil
}

// ListServices lists one page of the services in the local store, in id
// order.
func (s *Server) ListServices(_ context.Context, req *api.ListServicesRequest) (*api.ListServicesResponse, error) {
	after, err := paging.After(req.PageToken)
	if err != nil {
		return nil, err
	}
	page := paging.NewPage[*api.Service](req.PageSize)
	s.store.View(func(tx store.ReadTx) {
		tx.ScanServices(after, func(svc *api.Service) bool { return page.Add(svc.Id, svc) })
	})
	return &api.ListServicesResponse{Services: page.Items, NextPageToken: page.NextToken()}, nil
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
		tx.ScanTasks(after, svcID, nodeID, func(t *api.Task) bool { return page.Add(t.Id, t) })
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
