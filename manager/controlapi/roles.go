package controlapi

import (
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/voterset"
)

// setDesiredRole records the operator's promote or demote of n (role nil:
// no change). The leader's role manager carries it out. A demotion that
// would leave no manager, or that the managers staying and up could not
// survive with a quorum, is refused here with invalid_spec.
func setDesiredRole(tx *store.Tx, n *api.Node, role *api.NodeRole) error {
	if role == nil {
		return nil
	}
	switch *role {
	case api.NodeRole_NODE_ROLE_MANAGER:
	case api.NodeRole_NODE_ROLE_WORKER:
		if err := voterset.CheckDemotion(tx.ListNodes(), n); err != nil {
			return invalid("cannot demote %s: %v", n.Hostname, err)
		}
	default:
		return invalid("role must be manager or worker, not %d", *role)
	}
	n.DesiredRole = *role
	return nil
}
