package controlapi

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// checkLimits refuses a replicated service spec beyond the cluster-wide
// limits (api/limits) with limit_exceeded, naming the field and the limit.
// was is the spec it replaces, nil at create: an update that grows nothing
// already over a limit passes, so lowering a limit stops a service growing
// without freezing one already above it (docs/adr/0022).
func checkLimits(tx store.ReadTx, spec, was *api.ServiceSpec) error {
	if was == nil {
		if n, limit := uint64(len(tx.ListServices())), limits.MaxServices(tx.Cluster()); n >= limit {
			return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
				"service %s: the cluster holds %d services, its max_services is %d "+
					"(remove one, or jaco cluster update --max-services changes it)", spec.GetName(), n, limit)
		}
	}
	if api.PerNode(spec.GetMode()) {
		return nil // one replica per node: the nodes bound it
	}
	replicas, grows := spec.GetReplicas(), spec.GetReplicas() > was.GetReplicas()
	if limit := limits.MaxReplicasPerService(tx.Cluster()); replicas > limit && grows {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"service %s: replicas %d is over the cluster's max_replicas_per_service %d "+
				"(jaco cluster update --max-replicas-per-service changes it)", spec.GetName(), replicas, limit)
	}
	size := uint64(proto.Size(spec))
	if was != nil && size > uint64(proto.Size(was)) {
		grows = true
	}
	// replicas <= MaxReplicaSpecBytes/size is replicas*size <= the limit,
	// without overflow.
	if size > 0 && replicas > limits.MaxReplicaSpecBytes/size && grows {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"service %s: replicas %d × a %d-byte spec is over the limit of %d bytes of replica specs per service "+
				"(at most %d replicas of this spec; every replica holds a copy of it)",
			spec.GetName(), replicas, size, limits.MaxReplicaSpecBytes, limits.MaxReplicaSpecBytes/size)
	}
	if grows {
		return checkClusterTotals(tx, spec, replicas, size)
	}
	return nil
}

// checkClusterTotals refuses spec when, with the other replicated
// services as stored, the cluster's replicas or its replica specs' bytes
// would pass their cluster-wide bounds. Each term is within the
// per-service limits checked before, so the sums cannot overflow.
func checkClusterTotals(tx store.ReadTx, spec *api.ServiceSpec, replicas, size uint64) error {
	totalReplicas, totalBytes := replicas, replicas*size
	for _, svc := range tx.ListServices() {
		other := svc.GetSpec()
		if other.GetName() == spec.GetName() || api.PerNode(other.GetMode()) {
			continue
		}
		totalReplicas += other.GetReplicas()
		totalBytes += other.GetReplicas() * uint64(proto.Size(other))
	}
	if totalReplicas > limits.MaxClusterReplicas {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"service %s: replicas %d would bring the cluster's replicated services to %d replicas, over the limit of %d",
			spec.GetName(), replicas, totalReplicas, limits.MaxClusterReplicas)
	}
	if totalBytes > limits.MaxClusterReplicaSpecBytes {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"service %s: replicas %d × a %d-byte spec would bring the cluster's replica specs to %d bytes, over the limit of %d",
			spec.GetName(), replicas, size, totalBytes, limits.MaxClusterReplicaSpecBytes)
	}
	return nil
}
