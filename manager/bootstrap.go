package manager

import (
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
)

// A manager's raft state on disk, before a Manager opens it: whether
// there is any, and writing it when a node inits, joins, forms or is
// promoted. The daemon reaches raft through these and Open only
// (docs/design.md §2), so the raft member's package stays the manager's.

// ErrRemoved is Err of a manager whose raft member applied its own
// removal from the raft group.
var ErrRemoved = raft.ErrRemoved

// StateExists reports whether raftDir holds raft state.
func StateExists(raftDir string) bool { return raft.Exists(raftDir) }

// HasStateToForce reports whether raftDir holds raft state that
// ForceNewCluster can work on: a log, or the new state of a swap cut
// short.
func HasStateToForce(raftDir string) bool { return raft.HasStateToForce(raftDir) }

// NewRaftID returns a random, non-zero raft id. Ids are never reused: a
// member that leaves and comes back gets a new one.
func NewRaftID() (uint64, error) { return raft.NewRaftID() }

// Bootstrap writes the raft state of a new cluster whose sole voter is
// self into raftDir: one entry adds self, the next is first (the
// ClusterInit batch), both committed. The state appears whole or not at
// all, so an init cut short by a crash can simply run again.
func Bootstrap(raftDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, first *api.InternalRaftRequest) error {
	return raft.Bootstrap(raftDir, sealer, clusterID, self, first)
}

// BootstrapStatic writes the raft state of member self of a cluster
// formed from a static configuration (docs/adr/0014-static-formation.md):
// every member a voter, then first, all committed. Every member must be
// given the same members, in the same order, and the same first.
func BootstrapStatic(raftDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, members []*api.RaftMember, first *api.InternalRaftRequest) error {
	return raft.BootstrapStatic(raftDir, sealer, clusterID, self, members, first)
}

// BootstrapJoin writes the empty raft state of a member the leader added
// to a running cluster (a join or a promotion): its identity and the
// peers it was told of, which it answers until the leader ships it the
// log.
func BootstrapJoin(raftDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, peers []*api.RaftMember) error {
	return raft.BootstrapJoin(raftDir, sealer, clusterID, self, peers)
}
