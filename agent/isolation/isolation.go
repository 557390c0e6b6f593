package isolation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/google/nftables"

	"github.com/jaco-project/jaco/api"
)

// ErrUnavailable wraps every refusal of an unavailable ruleset.
var ErrUnavailable = errors.New("network isolation unavailable")

// Ruleset is one node's isolation: its nftables table and the replicas it
// knows. Safe for concurrent use.
type Ruleset struct {
	rs     ruleset
	sysctl string
	log    *slog.Logger

	mu      sync.Mutex
	loadErr error // set by a failed Load; nil before Load, too
	loaded  bool
	members map[string]Member
	// inKernel is what the kernel's sets hold as far as this Ruleset
	// wrote them; nil until the first sync replaces them whole (after a
	// Load that kept an earlier jacod's sets).
	inKernel *contents
}

// Option configures New.
type Option func(*Ruleset)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(r *Ruleset) { r.log = l } }

// WithBridgeSysctl sets the bridge netfilter switch's path (default
// BridgeNetfilterSysctl; tests point it elsewhere).
func WithBridgeSysctl(path string) Option { return func(r *Ruleset) { r.sysctl = path } }

// New returns the ruleset for table name (an nftables table name: the
// node's CNI network name). Nothing is loaded until Load.
func New(name string, opts ...Option) *Ruleset {
	r := &Ruleset{rs: newRuleset(name), sysctl: BridgeNetfilterSysctl, log: slog.Default(), members: map[string]Member{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Load loads the table into the kernel. Its error says why isolation is
// unavailable; afterwards Usable returns the same error and Attach
// refuses replicas.
func (r *Ruleset) Load() error {
	err := r.load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.loadErr = fmt.Errorf("%w: %w", ErrUnavailable, err)
		return r.loadErr
	}
	r.loaded = true
	r.log.Info("network isolation loaded", "table", "inet "+r.rs.table.Name)
	return nil
}

func (r *Ruleset) load() error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if err := r.rs.load(conn); err != nil {
		return fmt.Errorf("nftables table inet %s: %w", r.rs.table.Name, err)
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("nftables table inet %s: %w", r.rs.table.Name, err)
	}
	return enableBridgeNetfilter(r.sysctl)
}

// Usable is nil when the ruleset is loaded; else it says why replicas may
// not run.
func (r *Ruleset) Usable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usable()
}

func (r *Ruleset) usable() error {
	switch {
	case r.loadErr != nil:
		return r.loadErr
	case !r.loaded:
		return fmt.Errorf("%w: ruleset not loaded", ErrUnavailable)
	}
	return nil
}

// Attach adds a replica of service (running spec) at addr and updates
// the kernel's sets before returning: the replica is isolated from its
// first packet when Attach precedes its start. Attaching a replica again
// replaces what was known of it.
func (r *Ruleset) Attach(_ context.Context, replicaID string, addr netip.Addr, service string, spec *api.ServiceSpec) error {
	if !addr.Is4() {
		return fmt.Errorf("isolation: replica %s: address %s is not IPv4", replicaID, addr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(); err != nil {
		return fmt.Errorf("replica %s: %w", replicaID, err)
	}
	old, had := r.members[replicaID]
	r.members[replicaID] = MemberOf(replicaID, addr, service, spec)
	if err := r.sync(); err != nil {
		if had {
			r.members[replicaID] = old
		} else {
			delete(r.members, replicaID)
		}
		return fmt.Errorf("isolation: attach replica %s: %w", replicaID, err)
	}
	return nil
}

// Detach forgets a replica; detaching an unknown one does nothing.
func (r *Ruleset) Detach(_ context.Context, replicaID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[replicaID]
	if !ok || r.usable() != nil {
		return nil
	}
	delete(r.members, replicaID)
	if err := r.sync(); err != nil {
		r.members[replicaID] = m
		return fmt.Errorf("isolation: detach replica %s: %w", replicaID, err)
	}
	return nil
}

// Members are the replicas attached now, by replica id.
func (r *Ruleset) Members() []Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := slices.Sorted(maps.Keys(r.members))
	out := make([]Member, len(ids))
	for i, id := range ids {
		out[i] = r.members[id]
	}
	return out
}

// sync makes the kernel's sets what members imply (r.mu held). It sends
// only the difference from what it wrote last, in one transaction: an
// attach changes the pairs of one replica, not the replicas² pairs of the
// whole node, which no netlink batch could carry for a large service. The
// first sync replaces the sets whole, in transactions of bounded size.
func (r *Ruleset) sync() error {
	want := contentsOf(slices.Collect(maps.Values(r.members)))
	if r.inKernel == nil {
		if err := r.rs.replaceAll(want); err != nil {
			return fmt.Errorf("nftables table inet %s: %w", r.rs.table.Name, err)
		}
		r.inKernel = want
		return nil
	}
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if err := r.rs.update(conn, r.inKernel, want); err != nil {
		return err
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("nftables table inet %s: %w", r.rs.table.Name, err)
	}
	r.inKernel = want
	return nil
}
