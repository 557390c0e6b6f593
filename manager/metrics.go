package manager

import (
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/internal/metrics"
	"github.com/jaco-project/jaco/manager/scheduler"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Collector is the manager's metrics: the raft member's, the store's and
// the subsystems'. The daemon serves them while the manager runs
// (docs/design.md, "Metrics").
func (m *Manager) Collector() prometheus.Collector { return m.collector }

// collect makes the manager's collector of its parts' and the cluster
// state the store holds.
func (m *Manager) collect(parts ...prometheus.Collector) {
	m.collector = append(metrics.Collectors(parts), clusterState{m.store})
}

var (
	pendingDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "scheduler", "pending_replicas"),
		"Replicas waiting for a node, by the reason the scheduler gave (none: not looked at yet), as this manager's store holds them.",
		[]string{"reason"}, nil)
	updatesDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "orchestrator", "updates"),
		"Services by the state of their latest update or rollback (services never updated are left out).",
		[]string{"state"}, nil)
	drainsDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "orchestrator", "drains"),
		"Nodes by the state of their drain (draining: in progress; timed_out: stopped, the operator must act).",
		[]string{"state"}, nil)
	rebalancesDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "orchestrator", "rebalances"),
		"Services by the state of their latest rebalance (services never rebalanced are left out).",
		[]string{"state"}, nil)
	nodesDesc = prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "cluster", "nodes"),
		"Nodes by role, availability and status (ready, down, unknown).",
		[]string{"role", "availability", "status"}, nil)
)

// clusterState reports what the store holds that an operator alerts on,
// read at scrape time in one view. Every manager reports it from its own
// store, so a query takes one manager's (max by) rather than a sum.
type clusterState struct{ st *store.Store }

func (c clusterState) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pendingDesc, updatesDesc, drainsDesc, rebalancesDesc, nodesDesc} {
		ch <- d
	}
}

func (c clusterState) Collect(ch chan<- prometheus.Metric) {
	// The words the scheduler and the orchestrator write are served at 0
	// too: an alert on a series that is sometimes absent is easy to get
	// wrong.
	pending := map[string]int{"none": 0, scheduler.ReasonNoSuitableNode: 0, scheduler.ReasonWaitingOnDependency: 0,
		scheduler.ReasonVolumeUnavailable: 0}
	updates := zeroes(api.UpdateState_UPDATE_STATE_UNSPECIFIED.Descriptor())
	drains := zeroes(api.DrainState_DRAIN_STATE_NONE.Descriptor())
	rebalances := zeroes(api.RebalanceState_REBALANCE_STATE_UNSPECIFIED.Descriptor())
	type nodeKey struct{ role, availability, status string }
	nodes := map[nodeKey]int{}
	c.st.View(func(tx store.ReadTx) {
		tx.EachTask("", "", func(t *api.Task) bool {
			if t.GetStatus().GetState() == api.TaskState_TASK_STATE_PENDING {
				reason := t.GetStatus().GetReason()
				if reason == "" {
					reason = "none"
				}
				pending[reason]++
			}
			return true
		})
		for _, s := range tx.ListServices() {
			if st := s.GetUpdateStatus().GetState(); st != api.UpdateState_UPDATE_STATE_UNSPECIFIED {
				updates[enumword.Of(st)]++
			}
			if st := s.GetRebalance().GetState(); st != api.RebalanceState_REBALANCE_STATE_UNSPECIFIED {
				rebalances[enumword.Of(st)]++
			}
		}
		for _, n := range tx.ListNodes() {
			if st := n.GetDrain().GetState(); st != api.DrainState_DRAIN_STATE_NONE {
				drains[enumword.Of(st)]++
			}
			nodes[nodeKey{enumword.Of(n.GetRole()), enumword.Of(n.GetAvailability()), enumword.Of(n.GetStatus().GetState())}]++
		}
	})
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for reason, n := range pending {
		gauge(pendingDesc, n, reason)
	}
	for state, n := range updates {
		gauge(updatesDesc, n, state)
	}
	for state, n := range drains {
		gauge(drainsDesc, n, state)
	}
	for state, n := range rebalances {
		gauge(rebalancesDesc, n, state)
	}
	for k, n := range nodes {
		gauge(nodesDesc, n, k.role, k.availability, k.status)
	}
}

// zeroes maps the word of each value of an enum but its zero (none,
// unspecified) to 0.
func zeroes(ed protoreflect.EnumDescriptor) map[string]int {
	out := map[string]int{}
	for i := range ed.Values().Len() {
		if v := ed.Values().Get(i); v.Number() != 0 {
			w, _ := enumword.Name(ed, v.Number())
			out[w] = 0
		}
	}
	return out
}
