package controlapi

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// TestValidateJobSpecs: jobs take what Swarm's jobs take, and refuse the
// rest invalid_spec, naming what does not apply.
func TestValidateJobSpecs(t *testing.T) {
	job := func(mode api.ServiceMode, fn func(*api.ServiceSpec)) *api.ServiceSpec {
		s := &api.ServiceSpec{Name: "job", Image: "img", Mode: mode}
		if mode == api.ServiceMode_SERVICE_MODE_REPLICATED_JOB {
			s.Replicas = 5
		}
		fn(s)
		return s
	}
	const (
		rjob = api.ServiceMode_SERVICE_MODE_REPLICATED_JOB
		gjob = api.ServiceMode_SERVICE_MODE_GLOBAL_JOB
	)
	for name, s := range map[string]*api.ServiceSpec{
		"replicated job":                job(rjob, func(*api.ServiceSpec) {}),
		"max_concurrent":                job(rjob, func(s *api.ServiceSpec) { s.MaxConcurrent = 2 }),
		"max_concurrent above replicas": job(rjob, func(s *api.ServiceSpec) { s.MaxConcurrent = 9 }),
		"global job":                    job(gjob, func(*api.ServiceSpec) {}),
		"published port": job(rjob, func(s *api.ServiceSpec) {
			s.Ports = []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080}}
		}),
		"restart none": job(gjob, func(s *api.ServiceSpec) {
			s.Restart = &api.RestartPolicy{Condition: api.RestartCondition_RESTART_CONDITION_NONE}
		}),
	} {
		if err := validateSpec(s); err != nil {
			t.Errorf("%s: %v, want accepted", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		spec *api.ServiceSpec
		want string
	}{
		{"max_concurrent on a replicated service", job(api.ServiceMode_SERVICE_MODE_REPLICATED, func(s *api.ServiceSpec) { s.MaxConcurrent = 2 }),
			"max_concurrent applies to replicated jobs only"},
		{"max_concurrent on a global job", job(gjob, func(s *api.ServiceSpec) { s.MaxConcurrent = 2 }), "not to a global-job service"},
		{"replicas on a global job", job(gjob, func(s *api.ServiceSpec) { s.Replicas = 3 }), "--replicas does not apply"},
		{"update policy", job(rjob, func(s *api.ServiceSpec) { s.Update = &api.UpdatePolicy{Parallelism: 1} }), "no update or rollback policy"},
		{"rollback policy", job(gjob, func(s *api.ServiceSpec) { s.Rollback = &api.UpdatePolicy{} }), "no update or rollback policy"},
		{"unknown mode", job(7, func(*api.ServiceSpec) {}), "mode 7"},
	} {
		err := validateSpec(tc.spec)
		if reason.Of(err) != reason.InvalidSpec || !strings.Contains(reason.Sentence(err), tc.want) {
			t.Errorf("%s: %v, want invalid_spec saying %q", tc.name, err, tc.want)
		}
	}
}

// TestJobIterations: a job starts at iteration 1, and every change of its
// spec (force, replicas, a rollback) starts the next, with no update
// status; the same spec again, and any other service, start none.
func TestJobIterations(t *testing.T) {
	s, _ := newServiceServer(t)
	ctx := context.Background()
	spec := &api.ServiceSpec{Name: "job", Image: "img", Mode: api.ServiceMode_SERVICE_MODE_REPLICATED_JOB, Replicas: 5, MaxConcurrent: 2}
	resp, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if it := resp.Service.GetJobStatus().GetIteration(); it != 1 || resp.Service.GetJobStatus().GetLastExecution() == nil {
		t.Fatalf("new job's status %v, want iteration 1 with its time", resp.Service.GetJobStatus())
	}
	update := func(fn func(*api.ServiceSpec), rollback bool) *api.Service {
		t.Helper()
		req := &api.UpdateServiceRequest{Service: "job", Rollback: rollback}
		if !rollback {
			req.Spec = proto.CloneOf(s.service(resp.Service.Id).Spec)
			fn(req.Spec)
		}
		r, err := s.UpdateService(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Service
	}
	for i, step := range []struct {
		name     string
		fn       func(*api.ServiceSpec)
		rollback bool
		want     uint64
	}{
		{"same spec", func(*api.ServiceSpec) {}, false, 1},
		{"force", func(s *api.ServiceSpec) { s.ForceUpdate++ }, false, 2},
		{"replicas", func(s *api.ServiceSpec) { s.Replicas = 3 }, false, 3},
		{"rollback", nil, true, 4},
	} {
		got := update(step.fn, step.rollback)
		if it := got.GetJobStatus().GetIteration(); it != step.want {
			t.Fatalf("step %d (%s): iteration %d, want %d", i, step.name, it, step.want)
		}
		if got.UpdateStatus != nil {
			t.Fatalf("step %d (%s): update status %v; a job is never rolled out", i, step.name, got.UpdateStatus)
		}
	}
	// A mode change is refused, between a service and a job too.
	other := proto.CloneOf(s.service(resp.Service.Id).Spec)
	other.Mode, other.MaxConcurrent = api.ServiceMode_SERVICE_MODE_REPLICATED, 0
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "job", Spec: other}); reason.Of(err) != reason.InvalidSpec ||
		!strings.Contains(err.Error(), "replicated-job to replicated") {
		t.Fatalf("job to replicated: %v, want invalid_spec naming both modes", err)
	}
	web, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: &api.ServiceSpec{Name: "web", Image: "img", Replicas: 1}})
	if err != nil || web.Service.JobStatus != nil {
		t.Fatalf("a replicated service: %v, job status %v; want none", err, web.GetService().GetJobStatus())
	}
	if _, err := s.RebalanceService(ctx, &api.RebalanceServiceRequest{Service: "job"}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("rebalance of a job: %v, want invalid_spec", err)
	}
}
