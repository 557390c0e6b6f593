package compose

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// TestJobModes: deploy.mode replicated-job takes deploy.replicas as its
// completions, global-job takes none (docs/adr/0060-jobs.md).
func TestJobModes(t *testing.T) {
	st, err := load(t, "services:\n  migrate:\n    image: x\n    deploy:\n      mode: replicated-job\n      replicas: 5\n"+
		"  sweep:\n    image: x\n    deploy:\n      mode: global-job\n")
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]*api.ServiceSpec{}
	for _, s := range st.Services {
		modes[s.GetName()] = s
	}
	if s := modes["st_migrate"]; s.GetMode() != api.ServiceMode_SERVICE_MODE_REPLICATED_JOB || s.GetReplicas() != 5 {
		t.Errorf("migrate: mode %v, replicas %d; want a replicated job of 5", s.GetMode(), s.GetReplicas())
	}
	if s := modes["st_sweep"]; s.GetMode() != api.ServiceMode_SERVICE_MODE_GLOBAL_JOB || s.GetReplicas() != 0 {
		t.Errorf("sweep: mode %v, replicas %d; want a global job", s.GetMode(), s.GetReplicas())
	}
	_, err = load(t, "services:\n  sweep:\n    image: x\n    deploy:\n      mode: global-job\n      replicas: 2\n")
	if err == nil || !strings.Contains(err.Error(), "services.sweep.deploy.replicas") {
		t.Fatalf("global-job with replicas: %v, want an error naming the key", err)
	}
}
