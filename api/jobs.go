package api

// IsJob reports whether mode runs replicas to completion rather than
// keeping them running (docs/adr/0060-jobs.md).
func IsJob(mode ServiceMode) bool {
	return mode == ServiceMode_SERVICE_MODE_REPLICATED_JOB || mode == ServiceMode_SERVICE_MODE_GLOBAL_JOB
}

// PerNode reports whether mode places one replica on every eligible node
// (global services and global jobs) rather than numbered slots.
func PerNode(mode ServiceMode) bool {
	return mode == ServiceMode_SERVICE_MODE_GLOBAL || mode == ServiceMode_SERVICE_MODE_GLOBAL_JOB
}

// MaxConcurrentOf is how many replicas of a replicated job may run at
// once: max_concurrent, or every one of its replicas when unset (0), as
// `docker service create --mode replicated-job` defaults it.
func MaxConcurrentOf(spec *ServiceSpec) uint64 {
	if n := spec.GetMaxConcurrent(); n > 0 {
		return min(n, spec.GetReplicas())
	}
	return spec.GetReplicas()
}

// ModeWord is mode as the CLI and compose spell it (Docker's words).
func ModeWord(mode ServiceMode) string {
	switch mode {
	case ServiceMode_SERVICE_MODE_GLOBAL:
		return "global"
	case ServiceMode_SERVICE_MODE_REPLICATED_JOB:
		return "replicated-job"
	case ServiceMode_SERVICE_MODE_GLOBAL_JOB:
		return "global-job"
	}
	return "replicated"
}
