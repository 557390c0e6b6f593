package api

import "time"

// Defaults of the cluster's graces for lost nodes (docs/adr/0042).
const (
	// DefaultPartitionGrace: a node cut off from the managers, still heard
	// by its monitors, keeps its replicas' slots this long.
	DefaultPartitionGrace = time.Minute
	// DefaultDownGrace: a node nobody hears has its replicas replaced at
	// once; the dispatcher's heartbeat grace has passed already.
	DefaultDownGrace = 0
)

// PartitionGraceOf is c's partition grace.
func PartitionGraceOf(c *Cluster) time.Duration {
	if d := c.GetPartitionGrace(); d != nil {
		return d.AsDuration()
	}
	return DefaultPartitionGrace
}

// DownGraceOf is c's down grace.
func DownGraceOf(c *Cluster) time.Duration {
	if d := c.GetDownGrace(); d != nil {
		return d.AsDuration()
	}
	return DefaultDownGrace
}

// Stop ladder defaults (docs/design.md §9).
const (
	DefaultStopGracePeriod  = 2 * time.Minute
	DefaultAbortGracePeriod = 30 * time.Second
)

// StopGracePeriods returns the spec's stop and abort grace periods with
// the defaults filled in: what the runtimes wait, and what a client
// waiting for a replica to stop must allow.
func StopGracePeriods(spec *ServiceSpec) (stop, abort time.Duration) {
	stop, abort = DefaultStopGracePeriod, DefaultAbortGracePeriod
	if d := spec.GetStopGracePeriod(); d != nil {
		stop = d.AsDuration()
	}
	if d := spec.GetAbortGracePeriod(); d != nil {
		abort = d.AsDuration()
	}
	return stop, abort
}
