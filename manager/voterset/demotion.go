package voterset

import (
	"errors"
	"fmt"

	"github.com/jaco-project/jaco/api"
)

// Why a demotion is refused before it starts.
var (
	// ErrDemoteLastManager: the cluster would have no manager left.
	ErrDemoteLastManager = errors.New("it is the last manager; a cluster needs at least one")
	// ErrDemoteCostsQuorum: the managers that would stay and are up could
	// not form a quorum of the voters they would need.
	ErrDemoteCostsQuorum = errors.New("the managers that would stay and are up could not form a quorum")
)

// effectiveRole is the role a node is headed for: its desired role when
// one is set, else its role.
func effectiveRole(n *api.Node) api.NodeRole {
	if n.DesiredRole != api.NodeRole_NODE_ROLE_UNSPECIFIED {
		return n.DesiredRole
	}
	return n.Role
}

// CheckDemotion says whether target may be demoted given all nodes: not
// when no other manager would stay (counting those still headed for
// manager), and not when the managers that would stay and are up (agent
// status ready) are fewer than a quorum of TargetVoters of those that
// would stay. A node that is not a manager and not headed for one passes.
func CheckDemotion(nodes []*api.Node, target *api.Node) error {
	if target.Role != api.NodeRole_NODE_ROLE_MANAGER && target.DesiredRole != api.NodeRole_NODE_ROLE_MANAGER {
		return nil
	}
	var stay, up int
	for _, n := range nodes {
		if n.Id == target.Id || n.Role != api.NodeRole_NODE_ROLE_MANAGER || effectiveRole(n) != api.NodeRole_NODE_ROLE_MANAGER {
			continue
		}
		stay++
		if n.Status.GetState() == api.NodeStatusState_NODE_STATUS_STATE_READY {
			up++
		}
	}
	if stay == 0 {
		return ErrDemoteLastManager
	}
	if quorum := TargetVoters(stay)/2 + 1; up < quorum {
		return fmt.Errorf("%w (%d of %d up, %d needed)", ErrDemoteCostsQuorum, up, stay, quorum)
	}
	return nil
}
