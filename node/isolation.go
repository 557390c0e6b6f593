package node

import (
	"github.com/jaco-project/jaco/agent"
	"github.com/jaco-project/jaco/agent/exec"
	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/agent/isolation"
	"github.com/jaco-project/jaco/api"
)

// loadIsolation loads the ruleset that keeps this node's service networks
// apart (agent/isolation), named like the node's CNI network. A ruleset
// that fails to load is still returned: it refuses every replica, and
// the node reports isolation_unavailable (describe) so the scheduler
// skips it. There is deliberately no way to run containers unisolated.
func (n *Node) loadIsolation(names ctrd.Names) *isolation.Ruleset {
	iso := isolation.New(names.Network, isolation.WithLogger(n.log.With("component", "isolation")))
	if err := iso.Load(); err != nil {
		n.log.Error("this node runs no replicas: its network isolation ruleset did not load "+
			"(jacod needs CAP_NET_ADMIN and a kernel with nf_tables and br_netfilter)", "err", err)
	}
	return iso
}

// describe is the agent's description of this node: the machine and its
// runtimes, and whether replicas may run here. iso is nil when the node
// runs no containers (hook-bundle replicas are not isolated, so their
// nodes never lack isolation).
func describe(runtimes []exec.Runtime, iso *isolation.Ruleset) func() *api.NodeDescription {
	return func() *api.NodeDescription {
		d := agent.MachineDescription(runtimes)
		if iso == nil {
			return d
		}
		if err := iso.Usable(); err != nil {
			d.IsolationUnavailable = true
			d.IsolationMessage = err.Error()
		}
		return d
	}
}
