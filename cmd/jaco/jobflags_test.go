package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
)

// TestJobFlags: --mode takes Docker's job modes, --max-concurrent is
// written only when given (0 is the server's default, every replica at
// once), and an unknown mode is a usage error as parsed.
func TestJobFlags(t *testing.T) {
	parse := func(all bool, spec *api.ServiceSpec, args ...string) (*api.ServiceSpec, error) {
		var f specFlags
		cmd := &cobra.Command{}
		f.register(cmd.Flags())
		if err := cmd.Flags().Parse(args); err != nil {
			return nil, err
		}
		return spec, f.apply(cmd, spec, all)
	}
	spec, err := parse(true, &api.ServiceSpec{}, "--mode", "replicated-job", "--replicas", "5", "--max-concurrent", "2")
	if err != nil || spec.Mode != api.ServiceMode_SERVICE_MODE_REPLICATED_JOB || spec.Replicas != 5 || spec.MaxConcurrent != 2 {
		t.Fatalf("replicated-job: %v, %v; want 5 completions, 2 at once", spec, err)
	}
	if spec.Update != nil || spec.Rollback != nil {
		t.Fatalf("create wrote update policies nobody asked for, which a job refuses: %v", spec)
	}
	spec, err = parse(true, &api.ServiceSpec{}, "--mode", "replicated-job", "--replicas", "3")
	if err != nil || spec.MaxConcurrent != 0 {
		t.Fatalf("no --max-concurrent: %v, %v; want 0 (the server's default)", spec, err)
	}
	spec, err = parse(true, &api.ServiceSpec{}, "--mode", "global-job")
	if err != nil || spec.Mode != api.ServiceMode_SERVICE_MODE_GLOBAL_JOB || spec.Replicas != 0 {
		t.Fatalf("global-job: %v, %v; want no replica count", spec, err)
	}
	spec, err = parse(false, &api.ServiceSpec{Mode: api.ServiceMode_SERVICE_MODE_REPLICATED_JOB, Replicas: 5, MaxConcurrent: 2}, "--max-concurrent", "4")
	if err != nil || spec.MaxConcurrent != 4 || spec.Replicas != 5 || spec.Mode != api.ServiceMode_SERVICE_MODE_REPLICATED_JOB {
		t.Fatalf("update --max-concurrent: %v, %v; want only max_concurrent changed", spec, err)
	}
	if _, err := parse(true, &api.ServiceSpec{}, "--mode", "cron"); err == nil {
		t.Fatal("--mode cron parsed")
	}
}

// TestServiceLsShowsJobProgress: a job's REPLICAS column says how many of
// its completions are done, as Swarm's does.
func TestServiceLsShowsJobProgress(t *testing.T) {
	job := &api.Service{Id: "j", Spec: &api.ServiceSpec{Name: "job", Mode: api.ServiceMode_SERVICE_MODE_REPLICATED_JOB, Replicas: 5, MaxConcurrent: 2}}
	gjob := &api.Service{Id: "g", Spec: &api.ServiceSpec{Name: "sweep", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL_JOB}}
	web := &api.Service{Id: "w", Spec: &api.ServiceSpec{Name: "web", Replicas: 2}}
	views := serviceViews([]*api.Service{job, gjob, web}, map[string]*api.ReplicaCount{
		"j": {Live: 2, Running: 1, Completed: 3},
		"g": {Live: 1, Running: 1, Completed: 2},
		"w": {Live: 2, Running: 2},
	})
	for i, want := range []struct{ mode, text string }{
		{"replicated-job", "1/2 (3/5 completed)"},
		{"global-job", "1/1 (2/3 completed)"},
		{"replicated", "2/2"},
	} {
		if got := replicasText(views[i]); views[i].Mode != want.mode || got != want.text {
			t.Errorf("%s: mode %s, replicas %q; want %s, %q", views[i].Name, views[i].Mode, got, want.mode, want.text)
		}
	}
}
