// Package netalloc gives nodes their blocks of overlay networks (docs/adr/0026):
// a node that runs, or is about to run, a replica attached to a network
// gets a /26 of the network's subnet, which its replicas on that network
// take their addresses from and which its overlay peers route to it; the
// block goes back once no task on the node names the network. Every node
// that can carry overlay traffic also holds a block of the ingress network
// while any service publishes a port through the routing mesh (ingress.go).
// It also
// gives each service under the VIP endpoint mode its virtual IP on each of
// its networks (Service.virtual_ips), from the network's VIP block. It runs on
// the leader, as one pass per batch of changes, each pass one store
// transaction, so two leaders never hand out one block twice.
package netalloc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/pace"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Allocator is the leader subsystem.
type Allocator struct {
	st    *store.Store
	log   *slog.Logger
	delay time.Duration
}

// Option configures an Allocator.
type Option func(*Allocator)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(a *Allocator) { a.log = l } }

// WithBatchDelay sets the least time between two passes (default 20 ms);
// a change after a quiet spell gets a pass at once.
func WithBatchDelay(d time.Duration) Option { return func(a *Allocator) { a.delay = d } }

// New returns an allocator over st.
func New(st *store.Store, opts ...Option) *Allocator {
	a := &Allocator{st: st, log: slog.Default(), delay: 20 * time.Millisecond}
	for _, o := range opts {
		o(a)
	}
	return a
}

// retryDelay is how soon a failed pass is tried again.
const retryDelay = time.Second

// Run keeps nodes' blocks in step with the tasks placed on them until ctx
// ends.
func (a *Allocator) Run(ctx context.Context) {
	events := a.st.ViewAndWatch(ctx, func(store.ReadTx) {}, relevant)
	// A change after a quiet spell is acted on at once; while changes keep
	// coming, at most one pass per delay. (Pushing the pass back on every
	// change, as before, let a steady stream of task changes starve it.)
	pacer := pace.New(a.delay)
	timer := time.NewTimer(0) // the first pass
	defer timer.Stop()
	armed := true
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
			if !armed {
				timer.Reset(pacer.Delay())
				armed = true
			}
			continue
		case <-timer.C:
			armed = false
		}
		err := a.pass(ctx)
		pacer.Acted()
		if err != nil && ctx.Err() == nil {
			a.log.Warn("overlay block pass failed; trying again", "err", err)
			timer.Reset(retryDelay)
			armed = true
		}
	}
}

// pass writes every node whose blocks must change, in one transaction,
// then every service whose VIPs must change.
func (a *Allocator) pass(ctx context.Context) error {
	var short []shortage
	err := a.st.UpdateRetrying(ctx, 5, func(tx *store.Tx) error {
		var changed []*api.Node
		changed, short = plan(tx.ListNetworks(), tx.ListNodes(), store.AllTasks(tx), tx.ListServices())
		for _, n := range changed {
			if err := tx.Update(n); err != nil {
				return err
			}
		}
		return nil
	})
	for _, s := range short {
		a.log.Warn("no overlay block for a node", "node_id", s.nodeID, "network", s.network, "err", s.err)
	}
	if err != nil {
		return fmt.Errorf("write overlay blocks: %w", err)
	}
	return a.vipPass(ctx)
}

// maxWriteBytes bounds the services one VIP transaction writes (one at
// least): a service with a hook bundle and a previous spec can weigh
// megabytes, and a first pass may give hundreds of them VIPs.
const maxWriteBytes = 512 << 10

// vipPass writes every service whose VIPs must change, planning again in
// each transaction: what one commits, the next sees taken.
func (a *Allocator) vipPass(ctx context.Context) error {
	for {
		var short []vipShortage
		more := false
		err := a.st.UpdateRetrying(ctx, 5, func(tx *store.Tx) error {
			var changed []*api.Service
			changed, short = planVIPs(tx.ListNetworks(), tx.ListServices())
			size := 0
			for i, s := range changed {
				if size += proto.Size(s); i > 0 && size > maxWriteBytes {
					more = true
					return nil
				}
				if err := tx.Update(s); err != nil {
					return err
				}
			}
			more = false
			return nil
		})
		if err != nil {
			return fmt.Errorf("write virtual IPs: %w", err)
		}
		if !more {
			for _, s := range short {
				a.log.Warn("no virtual IP left on a network for a service", "service_id", s.serviceID, "network", s.network)
			}
			return nil
		}
	}
}

// relevant passes the changes that can change what blocks nodes need or
// what virtual IPs services hold: tasks placed, moved or deleted with
// networks, nodes and networks coming and going, nodes joining or leaving
// the mesh, services coming and going or changing networks, endpoint mode
// or whether they publish through the mesh. Task status reports, the bulk
// of writes, do not; nor do this package's own VIP writes.
func relevant(e store.Event) bool {
	switch o := e.Object.(type) {
	case *api.Network:
		return true
	case *api.Service:
		if e.Kind != store.EventUpdate {
			return true
		}
		old, _ := e.Old.(*api.Service)
		return old.GetSpec().GetEndpointMode() != o.GetSpec().GetEndpointMode() ||
			!slices.Equal(api.TaskNetworks(old.GetSpec()), api.TaskNetworks(o.GetSpec()))
	case *api.Node:
		if e.Kind != store.EventUpdate {
			return true
		}
		old, _ := e.Old.(*api.Node)
		return meshNode(old) != meshNode(o)
	case *api.Task:
		if len(api.TaskNetworks(o.GetSpec())) == 0 {
			return false
		}
		if e.Kind != store.EventUpdate {
			return true
		}
		old, _ := e.Old.(*api.Task)
		return old.GetNodeId() != o.GetNodeId()
	}
	return e.Kind == store.EventReset
}
