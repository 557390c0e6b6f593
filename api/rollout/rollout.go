// Package rollout holds what the Control API and the orchestrator must
// agree on about replacing a service's replicas: which spec changes
// replace them, and the update and rollback policies with their defaults
// (docs/design.md §8).
package rollout

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// DefaultMonitor is how long a new replica must run, healthy where it
// has a check, to count as updated when the policy does not say.
const DefaultMonitor = 5 * time.Second

// MaxPolicyDuration bounds an update policy's delay and monitor: longer
// is a typo (5h for 5s) that would hold an update for hours. The server
// refuses more, and the CLI as it parses the flags.
const MaxPolicyDuration = time.Hour

// Replaces reports whether changing a service's spec from a to b replaces
// its replicas: a change of the replica count, of the update and rollback
// policies, of the volume move policy, or of the endpoint mode alone does
// not. The endpoint mode only
// decides whether the service has a VIP: the nodes' DNS answers and VIP
// rules follow it from the service, and a replica's interfaces and
// addresses stay the same. Any port change replaces them, a publish mode
// change included: a replica publishing through the mesh is on the
// ingress network (api.TaskNetworks), one publishing on its host binds
// its node's port.
func Replaces(a, b *api.ServiceSpec) bool {
	if a == nil || b == nil {
		return a != b
	}
	a, b = proto.CloneOf(a), proto.CloneOf(b)
	for _, s := range []*api.ServiceSpec{a, b} {
		s.Replicas, s.Update, s.Rollback = 0, nil, nil
		s.EndpointMode = api.EndpointMode_ENDPOINT_MODE_UNSPECIFIED
		// What a replica does when its volume's node cannot take it
		// matters only then (docs/adr/0064-volume-move.md).
		s.VolumeMove = api.VolumeMovePolicy_VOLUME_MOVE_POLICY_PIN
	}
	return !proto.Equal(a, b)
}

// Policy is an UpdatePolicy with its defaults filled in.
type Policy struct {
	// Parallelism is how many slots are updated at a time; 0 is all.
	Parallelism     uint64
	Delay           time.Duration
	Monitor         time.Duration
	StartFirst      bool
	Action          api.UpdateFailureAction
	MaxFailureRatio float64
}

// Update is spec's update policy.
func Update(spec *api.ServiceSpec) Policy { return resolve(spec.GetUpdate()) }

// Rollback is spec's rollback policy. It never rolls back itself: a
// rollback that fails too often pauses.
func Rollback(spec *api.ServiceSpec) Policy {
	p := resolve(spec.GetRollback())
	if p.Action == api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK {
		p.Action = api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE
	}
	return p
}

// ForState is the policy in force while a service's update is in state:
// the rollback policy while rolling back, else the update policy.
func ForState(spec *api.ServiceSpec, state api.UpdateState) Policy {
	switch state {
	case api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED, api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED,
		api.UpdateState_UPDATE_STATE_ROLLBACK_COMPLETED:
		return Rollback(spec)
	}
	return Update(spec)
}

// resolve fills in Swarm's defaults: an unset policy updates one slot at a
// time, stop-first, monitoring each new replica for 5 s and pausing at
// the first failure; in a set policy only an unset monitor defaults.
func resolve(u *api.UpdatePolicy) Policy {
	if u == nil {
		return Policy{Parallelism: 1, Monitor: DefaultMonitor, Action: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE}
	}
	p := Policy{
		Parallelism:     u.GetParallelism(),
		Delay:           u.GetDelay().AsDuration(),
		Monitor:         DefaultMonitor,
		StartFirst:      u.GetOrder() == api.UpdateOrder_UPDATE_ORDER_START_FIRST,
		Action:          u.GetFailureAction(),
		MaxFailureRatio: u.GetMaxFailureRatio(),
	}
	if u.GetMonitor() != nil {
		p.Monitor = u.GetMonitor().AsDuration()
	}
	if p.Action == api.UpdateFailureAction_UPDATE_FAILURE_ACTION_UNSPECIFIED {
		p.Action = api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE
	}
	return p
}

// Rolling reports whether state is an update or rollback under way.
func Rolling(state api.UpdateState) bool {
	return state == api.UpdateState_UPDATE_STATE_UPDATING || state == api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED
}

// Paused reports whether state is an update or rollback that stopped at a
// failure and waits for the operator.
func Paused(state api.UpdateState) bool {
	return state == api.UpdateState_UPDATE_STATE_PAUSED || state == api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED
}

// RebalanceRequest is the status a service's rebalance starts from,
// asked for at now (docs/adr/0040). Asked for again while it moves, it
// starts over, planned afresh.
func RebalanceRequest(now time.Time) *api.RebalanceStatus {
	return &api.RebalanceStatus{State: api.RebalanceState_REBALANCE_STATE_REQUESTED,
		RequestedAt: timestamppb.New(now), Message: "rebalance requested"}
}

// Rebalanceable says why svc cannot be rebalanced now ("" when it can):
// a global service holds one replica per node, a job's replicas run to
// completion (moving one would run it twice; docs/adr/0060-jobs.md), and
// an update rolling or paused moves replicas itself.
func Rebalanceable(svc *api.Service) string {
	switch svc.GetSpec().GetMode() {
	case api.ServiceMode_SERVICE_MODE_GLOBAL:
		return "it is global: one replica per node, nothing to even out"
	case api.ServiceMode_SERVICE_MODE_REPLICATED_JOB, api.ServiceMode_SERVICE_MODE_GLOBAL_JOB:
		return "it is a job: its replicas run to completion, nothing to even out"
	}
	switch st := svc.GetUpdateStatus().GetState(); {
	case Rolling(st):
		return "its update is in progress; rebalance it once the update has completed"
	case Paused(st):
		return "its update is paused; resume it (jaco service update) or roll it back first"
	}
	return ""
}
