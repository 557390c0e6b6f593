// Package limits states the cluster-wide bounds on what one request may
// ask the cluster to hold, so that no client can exhaust the leader's
// memory (a 1 000 000-replica service once took it to 8 GiB). Each
// bound that an operator may change is a setting on the cluster object
// whose zero value means the default here (docs/adr/0022).
package limits

import "github.com/jaco-project/jaco/api"

const (
	// DefaultMaxReplicasPerService is the replica limit of a cluster
	// whose object sets none.
	DefaultMaxReplicasPerService = 10_000
	// MaxReplicasCeiling is the highest the setting may be raised to; the
	// orchestrator keeps no more replicas of a service whatever a stored
	// spec says.
	MaxReplicasCeiling = 1 << 20
	// MaxReplicaSpecBytes bounds replicas × encoded spec size: every
	// replica holds a copy of its service's spec in the store, the raft
	// log and every manager's memory, so a big spec allows fewer replicas
	// (a 2 MiB spec, 128).
	MaxReplicaSpecBytes = 256 << 20
	// MaxNodeLabels bounds the labels of one node, and MaxLabelValueBytes
	// each value: labels live in every manager's memory and in every
	// placement decision.
	MaxNodeLabels      = 64
	MaxLabelValueBytes = 1024

	// DefaultMaxServices is the service limit of a cluster whose object
	// sets none; MaxServicesCeiling the highest it may be raised to.
	DefaultMaxServices = 10_000
	MaxServicesCeiling = 1 << 20
	// MaxClusterReplicas and MaxClusterReplicaSpecBytes bound the
	// replicated services of the whole cluster together, as the limits
	// above bound one: without them many services each within its own
	// limits would still exhaust the leader.
	MaxClusterReplicas         = 1 << 20
	MaxClusterReplicaSpecBytes = 1 << 30

	// MaxNetworks bounds the cluster's networks: each is a peer set and
	// ruleset on every node it reaches, and a listing returns them all at
	// once. MaxServiceNetworks bounds the networks of one service (an
	// interface in each of its replicas).
	MaxNetworks        = 1024
	MaxServiceNetworks = 8
)

// MaxServices is the service limit in force in cluster c (nil or unset:
// the default).
func MaxServices(c *api.Cluster) uint64 {
	if n := c.GetMaxServices(); n != 0 {
		return n
	}
	return DefaultMaxServices
}

// MaxReplicasPerService is the replica limit in force in cluster c (nil
// or unset: the default).
func MaxReplicasPerService(c *api.Cluster) uint64 {
	if n := c.GetMaxReplicasPerService(); n != 0 {
		return n
	}
	return DefaultMaxReplicasPerService
}
