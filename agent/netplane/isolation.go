package netplane

import (
	"log/slog"

	"github.com/jaco-project/jaco/agent/isolation"
	"github.com/jaco-project/jaco/api"
)

// LoadIsolation loads the ruleset that keeps this node's service networks
// apart (agent/isolation), named name (like the node's CNI network), for
// the container runtime. A ruleset that fails to load is still returned:
// it refuses every replica, and the node reports isolation_unavailable
// (DescribeIsolation) so the scheduler skips it. There is deliberately no
// way to run containers unisolated (docs/design.md §9).
func LoadIsolation(name string, log *slog.Logger) *isolation.Ruleset {
	iso := isolation.New(name, isolation.WithLogger(log.With("component", "isolation")))
	if err := iso.Load(); err != nil {
		log.Error("this node runs no replicas: its network isolation ruleset did not load "+
			"(jacod needs CAP_NET_ADMIN and a kernel with nf_tables and br_netfilter)", "err", err)
	}
	return iso
}

// DescribeIsolation says in the node's description d whether replicas
// may run here as far as isolation goes. iso is the container runtime's
// ruleset, nil when the node runs no containers (hook-bundle replicas are
// not isolated, so their nodes never lack isolation).
func DescribeIsolation(d *api.NodeDescription, iso *isolation.Ruleset) {
	if iso == nil {
		return
	}
	if err := iso.Usable(); err != nil {
		d.IsolationUnavailable = true
		d.IsolationMessage = err.Error()
	}
}
