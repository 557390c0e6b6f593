package node

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health service names (grpc.health.v1). Liveness is SERVING for the life
// of the process, whatever the cluster does: a quorum loss must never make
// a supervisor restart-loop the managers that could form it again.
// Readiness is SERVING once the node sees a leader: a manager that knows
// its raft leader, a worker whose agent holds a dispatcher session. The
// empty name is liveness, for probes that name no service.
const (
	HealthLiveness  = "jaco.liveness"
	HealthReadiness = "jaco.readiness"
)

// healthWatchPoll is how often Watch looks for a change to send.
const healthWatchPoll = 250 * time.Millisecond

// healthService answers for this daemon in every lifecycle state, without
// a token (it says nothing about the cluster beyond up or not).
type healthService struct {
	healthpb.UnimplementedHealthServer
	n *Node
}

func (h healthService) status(service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	switch service {
	case "", HealthLiveness:
		return healthpb.HealthCheckResponse_SERVING, nil
	case HealthReadiness:
		if h.n.seesLeader() {
			return healthpb.HealthCheckResponse_SERVING, nil
		}
		return healthpb.HealthCheckResponse_NOT_SERVING, nil
	}
	return 0, status.Errorf(codes.NotFound, "unknown health service %q (use %q or %q)", service, HealthLiveness, HealthReadiness)
}

func (h healthService) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, err := h.status(req.Service)
	if err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h healthService) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	resp := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, s := range []string{HealthLiveness, HealthReadiness} {
		st, _ := h.status(s)
		resp.Statuses[s] = &healthpb.HealthCheckResponse{Status: st}
	}
	return resp, nil
}

// Watch sends the status at once and then each change, until the caller
// goes.
func (h healthService) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	tick := time.NewTicker(healthWatchPoll)
	defer tick.Stop()
	for {
		st, err := h.status(req.Service)
		if err != nil {
			st = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
		}
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-tick.C:
		}
	}
}

// seesLeader is readiness: a manager knows its leader; a worker's agent
// holds a session with the leader's dispatcher.
func (n *Node) seesLeader() bool {
	if m := n.Manager(); m != nil {
		return m.HasLeader()
	}
	a := n.agent.Load()
	return a != nil && a.InSession()
}
