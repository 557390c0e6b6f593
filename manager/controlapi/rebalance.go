package controlapi

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
)

// RebalanceService asks the orchestrator to even out where a service's
// replicas run, or every replicated service's (docs/adr/0040). A named
// service that cannot be rebalanced now is refused; --all leaves such
// services out and names them. The leader's clock stamps the request, as
// it stamps the tasks the moves create.
func (s *Server) RebalanceService(ctx context.Context, req *api.RebalanceServiceRequest) (*api.RebalanceServiceResponse, error) {
	if (req.Service == "") == !req.All {
		return nil, invalid("name one service, or ask for all of them")
	}
	resp := &api.RebalanceServiceResponse{}
	var ids []string
	err := s.update(ctx, func(tx *store.Tx) error {
		resp.Skipped, ids = nil, nil
		var svcs []*api.Service
		if req.All {
			svcs = tx.ListServices()
		} else if svc := findService(tx, req.Service); svc != nil {
			svcs = []*api.Service{svc}
		} else {
			return notFound("service", req.Service)
		}
		now := time.Now()
		for _, svc := range svcs {
			if why := rollout.Rebalanceable(svc); why != "" {
				if !req.All {
					code, word := codes.FailedPrecondition, reason.UpdateInProgress
					if m := svc.Spec.GetMode(); api.PerNode(m) || api.IsJob(m) {
						word = reason.InvalidSpec
					}
					return reason.Error(code, word, "service %s cannot be rebalanced: %s", svc.Spec.GetName(), why)
				}
				if m := svc.Spec.GetMode(); !api.PerNode(m) && !api.IsJob(m) {
					resp.Skipped = append(resp.Skipped, fmt.Sprintf("%s: %s", svc.Spec.GetName(), why))
				}
				continue
			}
			svc.Rebalance = rollout.RebalanceRequest(now)
			if err := tx.Update(svc); err != nil {
				return err
			}
			ids = append(ids, svc.Id)
		}
		return nil
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	for _, id := range ids {
		if svc := s.service(id); svc != nil {
			resp.Services = append(resp.Services, withoutRegistryAuth(svc))
		}
	}
	return resp, nil
}
