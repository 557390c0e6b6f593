package orchestrator

import "github.com/jaco-project/jaco/api"

// reconcileService brings the tasks of service id in line with it, or
// removes them when the service is gone.
func (p *pass) reconcileService(id string) error {
	svc := p.tx.GetService(id)
	if svc == nil {
		return p.reconcileRemoved(id)
	}
	switch svc.GetSpec().GetMode() {
	case api.ServiceMode_SERVICE_MODE_GLOBAL, api.ServiceMode_SERVICE_MODE_GLOBAL_JOB:
		return p.reconcileGlobal(svc)
	case api.ServiceMode_SERVICE_MODE_REPLICATED_JOB:
		return p.reconcileJob(svc)
	}
	return p.reconcileReplicated(svc)
}

// reconcileRemoved stops the tasks of a removed service and deletes those
// that are terminal (tasks on down nodes count as ended) or were never
// assigned, a share of them per pass.
func (p *pass) reconcileRemoved(id string) error {
	start := len(p.plan.ops)
	for _, t := range p.tx.ListTasksByServiceShallow(id) {
		if len(p.plan.ops)-start >= p.share {
			p.more[id] = true
			return nil
		}
		if p.lost(t) {
			if err := p.orphan(t); err != nil {
				return err
			}
		}
		if err := p.retire(t); err != nil {
			return err
		}
	}
	return nil
}
