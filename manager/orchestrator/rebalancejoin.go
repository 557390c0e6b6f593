package orchestrator

import (
	"context"
	"log/slog"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// rebalanceOnJoin asks for a rebalance of every replicated service that
// can take one when a node becomes able to take replicas (READY and
// ACTIVE after it was not: it joined, came back from down, or came out
// of a drain or a pause), while the cluster's rebalance_on_join is on
// (docs/adr/0040). A burst of such nodes makes one request.
//
// It follows node changes as they come: a leader that takes over after
// the node's return and before the request committed does not make it.
func (o *Orchestrator) rebalanceOnJoin(ctx context.Context) {
	log := o.log.With("part", "rebalance")
	events := o.st.Watch(ctx, store.ObjectType[*api.Node](), store.ByKind(store.EventCreate, store.EventUpdate), cameIn)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			var hosts []string
			note := func(e store.Event) {
				if e.Kind != store.EventReset { // a reset names no node
					hosts = append(hosts, placement.Hostname(e.Object.(*api.Node)))
				}
			}
			note(e)
			if !takeBurst(events, note) {
				return
			}
			if len(hosts) > 0 {
				o.requestRebalances(ctx, log, hosts)
			}
		case <-ctx.Done():
			return
		}
	}
}

// cameIn: the node can take replicas now and could not before.
func cameIn(e store.Event) bool {
	n, ok := e.Object.(*api.Node)
	if !ok || !placement.Available(n) {
		return false
	}
	old, ok := e.Old.(*api.Node)
	return !ok || !placement.Available(old)
}

func (o *Orchestrator) requestRebalances(ctx context.Context, log *slog.Logger, hosts []string) {
	n := 0
	err := o.st.Update(ctx, func(tx *store.Tx) error {
		n = 0
		if !tx.Cluster().GetRebalanceOnJoin() {
			return nil
		}
		now := o.now()
		for _, svc := range tx.ListServices() {
			if rollout.Rebalanceable(svc) != "" {
				continue
			}
			svc.Rebalance = rollout.RebalanceRequest(now)
			if err := tx.Update(svc); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("cannot ask for a rebalance after nodes came in", "nodes", hosts, "err", err)
	case n > 0:
		log.Info("nodes came in: rebalancing services", "nodes", hosts, "services", n)
	}
}
