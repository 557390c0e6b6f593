package controlapi

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// validateJob checks what a service's mode asks of the rest of its spec
// (docs/adr/0060-jobs.md), as Swarm 20.10 does:
//   - the mode is one jaco knows;
//   - max_concurrent belongs to replicated jobs (Docker's CLI: "max-concurrent
//     can only be used with replicated-job mode");
//   - a global job, like a global service, runs one replica per node and
//     takes no replica count;
//   - a job has no update or rollback policy: each change of its spec runs
//     it again rather than rolling it out (Docker's CLI: "update and
//     rollback configuration is not supported for jobs"; swarmkit's
//     Control API: "Jobs may not have an update config").
//
// Published ports, health checks and restart policies are allowed, as
// Swarm allows them.
func validateJob(spec *api.ServiceSpec) error {
	if _, ok := api.ServiceMode_name[int32(spec.Mode)]; !ok {
		return invalid("mode %d: want replicated, global, replicated-job or global-job", spec.Mode)
	}
	if spec.MaxConcurrent != 0 && spec.Mode != api.ServiceMode_SERVICE_MODE_REPLICATED_JOB {
		return invalid("service %s: max_concurrent applies to replicated jobs only, not to a %s service",
			spec.Name, api.ModeWord(spec.Mode))
	}
	if !api.IsJob(spec.Mode) {
		return nil
	}
	if spec.Mode == api.ServiceMode_SERVICE_MODE_GLOBAL_JOB && spec.Replicas != 0 {
		return invalid("a global job runs one replica per node; --replicas does not apply")
	}
	if spec.Update != nil || spec.Rollback != nil {
		return invalid("service %s: a job has no update or rollback policy; a change of its spec runs it again", spec.Name)
	}
	return nil
}

// newJobStatus is the status a service starts with: a job's first
// iteration, none for other services.
func newJobStatus(spec *api.ServiceSpec) *api.JobStatus {
	if !api.IsJob(spec.GetMode()) {
		return nil
	}
	return &api.JobStatus{Iteration: 1, LastExecution: timestamppb.Now()}
}

// nextJobIteration starts a new run of svc, a job whose spec is changing
// or returning to its previous one: every slot (every node) runs once
// more, as Swarm does on each update of a job. A job is never rolled
// out, so the update status the change would start is dropped. Other
// services are left as they are.
func nextJobIteration(svc *api.Service) {
	if !api.IsJob(svc.GetSpec().GetMode()) {
		return
	}
	svc.JobStatus = &api.JobStatus{Iteration: svc.GetJobStatus().GetIteration() + 1, LastExecution: timestamppb.Now()}
	svc.UpdateStatus = nil
}
