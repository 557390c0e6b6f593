package manager

import (
	"time"

	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// ForceNewCluster rewrites the manager raft state in raftDir, before any
// manager opens it, as a cluster with this member its sole voter
// (docs/design.md §13). The state is replayed into a scratch store, which
// decides which members to blacklist; the manager opened afterwards
// rebuilds its own.
func ForceNewCluster(raftDir string, sealer *encryption.Sealer, now time.Time) (*raft.Forced, error) {
	replay := store.New(nil)
	defer replay.Close()
	return raft.ForceNewCluster(raftDir, sealer, replay, now)
}
