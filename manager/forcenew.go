package manager

import (
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Forced is what ForceNewCluster did, and the cluster object the replayed
// state holds: its CA lets the forced manager reissue its own certificate
// when that expired (docs/adr/0039). Cluster is nil when nothing was
// replayed (the state was forced before).
type Forced struct {
	*raft.Forced
	Cluster *api.Cluster
}

// ForceNewCluster rewrites the manager raft state in raftDir, before any
// manager opens it, as a cluster with this member its sole voter
// (docs/design.md §13). The state is replayed into a scratch store, which
// decides which members to blacklist; the manager opened afterwards
// rebuilds its own.
func ForceNewCluster(raftDir string, sealer *encryption.Sealer, now time.Time) (*Forced, error) {
	replay := store.New(nil)
	defer replay.Close()
	f, err := raft.ForceNewCluster(raftDir, sealer, replay, now)
	if err != nil {
		return nil, err
	}
	out := &Forced{Forced: f}
	replay.View(func(tx store.ReadTx) { out.Cluster = tx.Cluster() })
	return out, nil
}
