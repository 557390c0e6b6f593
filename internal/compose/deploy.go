package compose

import (
	"fmt"
	"math"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

// deploy maps the Swarm part of a service (key is services.NAME.deploy).
func (t *translator) deploy(key string, d *types.DeployConfig, spec *api.ServiceSpec) error {
	switch d.Mode {
	case "", "replicated":
		if d.Replicas != nil {
			if *d.Replicas < 0 {
				return fmt.Errorf("%s.replicas: %d is negative", key, *d.Replicas)
			}
			spec.Replicas = uint64(*d.Replicas)
		}
	case "global":
		spec.Mode, spec.Replicas = api.ServiceMode_SERVICE_MODE_GLOBAL, 0
		if d.Replicas != nil {
			return fmt.Errorf("%s.replicas: a global service runs one replica per node", key)
		}
	case "replicated-job":
		// replicas is the number of completions, all at once: compose
		// has no max_concurrent (docs/adr/0060-jobs.md).
		spec.Mode = api.ServiceMode_SERVICE_MODE_REPLICATED_JOB
		if d.Replicas != nil {
			if *d.Replicas < 0 {
				return fmt.Errorf("%s.replicas: %d is negative", key, *d.Replicas)
			}
			spec.Replicas = uint64(*d.Replicas)
		}
	case "global-job":
		spec.Mode, spec.Replicas = api.ServiceMode_SERVICE_MODE_GLOBAL_JOB, 0
		if d.Replicas != nil {
			return fmt.Errorf("%s.replicas: a global job runs one replica per node", key)
		}
	default:
		t.refuse(key+".mode", d.Mode)
	}
	switch d.EndpointMode {
	case "":
	case "vip":
		spec.EndpointMode = api.EndpointMode_ENDPOINT_MODE_VIP
	case "dnsrr":
		spec.EndpointMode = api.EndpointMode_ENDPOINT_MODE_DNSRR
	default:
		return fmt.Errorf("%s.endpoint_mode: %q: want vip or dnsrr", key, d.EndpointMode)
	}
	// deploy.labels are Swarm's service labels, labels its containers':
	// jaco has service labels only, so both land there, deploy's winning.
	for k, v := range d.Labels {
		spec.Labels[k] = v
	}
	if len(d.Placement.Constraints) > 0 || len(d.Placement.Preferences) > 0 {
		spec.Placement = &api.Placement{Constraints: d.Placement.Constraints}
		for _, p := range d.Placement.Preferences {
			spec.Placement.Spread = append(spec.Placement.Spread, p.Spread)
		}
	}
	spec.Limits = resources(d.Resources.Limits)
	spec.Reservations = resources(d.Resources.Reservations)
	if r := d.RestartPolicy; r != nil {
		if err := restartPolicy(key+".restart_policy", r, spec); err != nil {
			return err
		}
	}
	var err error
	if spec.Update, err = updatePolicy(key+".update_config", d.UpdateConfig, false); err != nil {
		return err
	}
	if spec.Rollback, err = updatePolicy(key+".rollback_config", d.RollbackConfig, true); err != nil {
		return err
	}
	return nil
}

// resources maps cpus and memory; cpus is rounded to a microcore, as
// compose reads it as a float32 (0.1 would otherwise be 100000001 nanocores).
func resources(r *types.Resource) *api.Resources {
	if r == nil || (r.NanoCPUs == 0 && r.MemoryBytes == 0) {
		return nil
	}
	return &api.Resources{
		NanoCpus:    int64(math.Round(float64(r.NanoCPUs.Value())*1e6)) * 1e3,
		MemoryBytes: int64(r.MemoryBytes),
	}
}

func restartPolicy(key string, r *types.RestartPolicy, spec *api.ServiceSpec) error {
	rp := &api.RestartPolicy{}
	switch r.Condition {
	case "", "any":
	case "on-failure":
		rp.Condition = api.RestartCondition_RESTART_CONDITION_ON_FAILURE
	case "none":
		rp.Condition = api.RestartCondition_RESTART_CONDITION_NONE
	default:
		return fmt.Errorf("%s.condition: %q: want any, on-failure or none", key, r.Condition)
	}
	if r.Delay != nil {
		rp.Delay = durationpb.New(time.Duration(*r.Delay))
	}
	if r.MaxAttempts != nil {
		rp.MaxAttempts = *r.MaxAttempts
	}
	if r.Window != nil {
		rp.Window = durationpb.New(time.Duration(*r.Window))
	}
	spec.Restart = rp
	return nil
}

// updatePolicy maps update_config (rollback_config when rollback). An
// unset parallelism is Swarm's 1, not jaco's 0 (all at once).
func updatePolicy(key string, u *types.UpdateConfig, rollback bool) (*api.UpdatePolicy, error) {
	if u == nil {
		return nil, nil
	}
	p := &api.UpdatePolicy{Parallelism: 1, MaxFailureRatio: float64(u.MaxFailureRatio)}
	if u.Parallelism != nil {
		p.Parallelism = *u.Parallelism
	}
	if u.Delay != 0 {
		p.Delay = durationpb.New(time.Duration(u.Delay))
	}
	if u.Monitor != 0 {
		p.Monitor = durationpb.New(time.Duration(u.Monitor))
	}
	switch u.Order {
	case "":
	case "stop-first":
		p.Order = api.UpdateOrder_UPDATE_ORDER_STOP_FIRST
	case "start-first":
		p.Order = api.UpdateOrder_UPDATE_ORDER_START_FIRST
	default:
		return nil, fmt.Errorf("%s.order: %q: want stop-first or start-first", key, u.Order)
	}
	switch u.FailureAction {
	case "":
	case "pause":
		p.FailureAction = api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE
	case "continue":
		p.FailureAction = api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE
	case "rollback":
		if rollback {
			return nil, fmt.Errorf("%s.failure_action: a rollback cannot roll back; want pause or continue", key)
		}
		p.FailureAction = api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK
	default:
		return nil, fmt.Errorf("%s.failure_action: %q: want pause, continue or rollback", key, u.FailureAction)
	}
	return p, nil
}
