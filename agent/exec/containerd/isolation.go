package containerd

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/jaco-project/jaco/api"
)

// Isolation keeps the node's service networks apart (agent/isolation
// implements it); the runtime tells it which address each replica holds.
type Isolation interface {
	// Usable is nil when replicas may run; else why none may (the node is
	// isolation_unavailable).
	Usable() error
	// Attach registers a replica's address before its task starts (and
	// again when a restarted agent adopts it); an error refuses the start.
	Attach(ctx context.Context, replicaID string, addr netip.Addr, service string, spec *api.ServiceSpec) error
	// Detach forgets a replica being removed.
	Detach(ctx context.Context, replicaID string) error
}

// WithIsolation makes the runtime register replicas with iso and refuse
// every replica while iso is not usable. Without it replicas are not
// isolated from each other.
func WithIsolation(iso Isolation) Option { return func(o *options) { o.isolation = iso } }

// checkIsolation refuses a replica when the node's isolation is unusable.
func (c *controller) checkIsolation() error {
	if c.rt.isolation == nil {
		return nil
	}
	if err := c.rt.isolation.Usable(); err != nil {
		return fmt.Errorf("replica %s: this node runs no replicas: %w", c.id, err)
	}
	return nil
}

// attach registers the replica's address with the node's isolation.
func (c *controller) attach(ctx context.Context, addr string) error {
	if c.rt.isolation == nil {
		return nil
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return fmt.Errorf("replica %s: address %q: %w", c.id, addr, err)
	}
	t := c.rep.Task
	if err := c.rt.isolation.Attach(ctx, t.GetId(), a, t.GetServiceName(), t.GetSpec()); err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	return nil
}

// detach forgets the replica in the node's isolation.
func (c *controller) detach(ctx context.Context) error {
	if c.rt.isolation == nil {
		return nil
	}
	return c.rt.isolation.Detach(ctx, c.rep.Task.GetId())
}

// attachAdopted registers a replica whose task exists already (a restarted
// agent's isolation knows nothing of it yet).
func (c *controller) attachAdopted(ctx context.Context) error {
	if c.rt.isolation == nil {
		return nil
	}
	st, err := loadState(c.rep.Dir)
	if err != nil {
		return err
	}
	if st.Address == "" {
		return fmt.Errorf("replica %s: running without a recorded address; cannot isolate it", c.id)
	}
	return c.attach(ctx, st.Address)
}
