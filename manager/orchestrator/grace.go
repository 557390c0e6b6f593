package orchestrator

import (
	"time"

	"github.com/jaco-project/jaco/api"
)

// nodeGraces is how long the replicas of a DOWN or PARTITIONED node keep
// their slots before they are replaced (docs/adr/0042).
type nodeGraces struct{ down, partition time.Duration }

func graceOf(c *api.Cluster) nodeGraces {
	return nodeGraces{down: api.DownGraceOf(c), partition: api.PartitionGraceOf(c)}
}
