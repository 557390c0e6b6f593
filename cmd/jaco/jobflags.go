package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jaco-project/jaco/api"
)

// Jobs (docs/adr/0060-jobs.md): the modes as Docker spells them, and
// --max-concurrent, on service create and update.

// modeWords are the values of --mode.
var modeWords = []string{"replicated", "global", "replicated-job", "global-job"}

// jobFlags are the job flags of `service create` and `service update`.
type jobFlags struct {
	maxConcurrent uint64
}

func (f *jobFlags) register(fs *pflag.FlagSet) {
	fs.Uint64Var(&f.maxConcurrent, "max-concurrent", 0,
		"replicated jobs: replicas run at once (default: --replicas, all at once)")
}

// applyMode writes --mode and --max-concurrent into spec, where set says
// which to write. A mode with one replica per node takes no replica
// count unless --replicas says one (the server then refuses it).
func (f *jobFlags) applyMode(cmd *cobra.Command, set func(string) bool, mode string, spec *api.ServiceSpec) error {
	if set("mode") {
		m, ok := map[string]api.ServiceMode{
			"replicated":     api.ServiceMode_SERVICE_MODE_REPLICATED,
			"global":         api.ServiceMode_SERVICE_MODE_GLOBAL,
			"replicated-job": api.ServiceMode_SERVICE_MODE_REPLICATED_JOB,
			"global-job":     api.ServiceMode_SERVICE_MODE_GLOBAL_JOB,
		}[mode]
		if !ok {
			return fmt.Errorf("--mode must be one of %v, not %q", modeWords, mode)
		}
		spec.Mode = m
		if api.PerNode(m) && !cmd.Flags().Changed("replicas") {
			spec.Replicas = 0
		}
	}
	// Only when given, on create too: 0 is the server's default.
	if cmd.Flags().Changed("max-concurrent") {
		spec.MaxConcurrent = f.maxConcurrent
	}
	return nil
}

// jobProgress adds a job's completions to its `service ls` view.
func jobProgress(v *serviceView, s *api.Service, c *api.ReplicaCount) {
	switch s.GetSpec().GetMode() {
	case api.ServiceMode_SERVICE_MODE_REPLICATED_JOB:
		v.Completed, v.Total = c.GetCompleted(), s.GetSpec().GetReplicas()
		// Desired: what may run now, as Swarm's job line shows it.
		v.Desired = min(api.MaxConcurrentOf(s.GetSpec()), v.Total-min(v.Completed, v.Total))
	case api.ServiceMode_SERVICE_MODE_GLOBAL_JOB:
		v.Completed = c.GetCompleted()
		v.Total = c.GetLive() + v.Completed
	}
}

// replicasText is the REPLICAS column of `service ls`: running/desired,
// and for a job its completions as Swarm shows them, "1/2 (3/5 completed)".
func replicasText(v serviceView) string {
	s := fmt.Sprintf("%d/%d", v.Running, v.Desired)
	if v.Mode == api.ModeWord(api.ServiceMode_SERVICE_MODE_REPLICATED_JOB) || v.Mode == api.ModeWord(api.ServiceMode_SERVICE_MODE_GLOBAL_JOB) {
		s += fmt.Sprintf(" (%d/%d completed)", v.Completed, v.Total)
	}
	return s
}
