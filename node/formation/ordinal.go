package formation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// Ordinal formation (docs/adr/0013-ordinal-formation.md): every replica
// runs with the same flags; the join reconciler below makes each one a
// voter at its current advertise address, whatever order they start in.
// Ordinal 0 bootstraps the cluster, but only when it has no raft state
// and no join address answers for an existing cluster.

// Join reconciler backoff: doubling from the base, capped, each wait
// jittered by ±50% so replicas that start together do not retry together.
const (
	joinRetryBase = 250 * time.Millisecond
	joinRetryMax  = 5 * time.Second
)

// runOrdinal is the join reconciler. It returns once this node is a voter
// at its advertise address, or when ctx ends (the node stops).
func (f *Former) runOrdinal(ctx context.Context) {
	log := f.log.With("component", "formation", "ordinal", f.cfg.Settings.Ordinal)
	wait := joinRetryBase
	for attempt := 1; ; attempt++ {
		wasInit := f.initialized()
		done, err := f.ordinalStep(ctx)
		if done {
			log.Info("formation complete: this node is a voter at its advertise address", "address", f.d.AdvertiseAddr(), "attempts", attempt)
			return
		}
		if err != nil {
			log.Info("formation not complete yet; retrying", "attempt", attempt, "err", err)
		}
		if f.initialized() != wasInit {
			wait = joinRetryBase // joined or bootstrapped: promotion is near
		}
		d := wait/2 + rand.N(wait)
		wait = min(2*wait, joinRetryMax)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}

// errClusterSeen: a join address belongs to a cluster that did not admit
// this node this time (no leader, refused): ordinal 0 must not bootstrap.
var errClusterSeen = errors.New("a cluster answers at the join addresses")

// ordinalStep takes one step towards "voter at the advertise address".
func (f *Former) ordinalStep(ctx context.Context) (done bool, err error) {
	if !f.initialized() {
		err := f.formationJoin(ctx)
		if err == nil || f.cfg.Settings.Ordinal != 0 || errors.Is(err, errClusterSeen) || ctx.Err() != nil {
			return false, err
		}
		// Ordinal 0, no state, and no cluster answered: bootstrap.
		f.log.Info("no cluster answers at the join addresses; ordinal 0 bootstraps one",
			"join_addr", strings.Join(f.cfg.Settings.JoinAddrs, ","), "last", err)
		return false, f.bootstrapOrdinal(ctx)
	}
	if f.d.State() == api.NodeState_NODE_STATE_LOCKED {
		return false, nil // autolock: nothing to check until `jaco node unlock`
	}
	m := f.d.Manager()
	if m == nil {
		return true, nil // a worker (demoted): nothing for formation to do
	}
	self := m.RaftID()
	members := m.RaftMembers()
	i := slices.IndexFunc(members, func(mem *api.RaftMember) bool { return mem.RaftId == self })
	if i < 0 {
		return false, nil // not in the configuration yet: the log is on its way
	}
	if addr, advertise := members[i].Address, f.d.AdvertiseAddr(); addr != advertise {
		f.log.Info("this member's address changed; asking to rewrite it", "from", addr, "to", advertise)
		_, err := f.eachJoinAddr(ctx, &api.SecretJoinRequest{Hostname: f.cfg.NodeName, Address: advertise, NodeId: m.NodeID()})
		return false, err
	}
	return m.IsVoter(), nil
}

// formationJoin asks each join address in turn to admit this node and
// installs the first admission.
func (f *Former) formationJoin(ctx context.Context) error {
	keyPEM, csrPEM, err := ca.NewNodeKey("joining-node")
	if err != nil {
		return err
	}
	resp, err := f.eachJoinAddr(ctx, &api.SecretJoinRequest{Hostname: f.cfg.NodeName, Address: f.d.AdvertiseAddr(), CsrPem: csrPEM})
	if err != nil {
		return err
	}
	return f.installJoined(resp, keyPEM)
}

// eachJoinAddr sends req to every address the join addresses resolve to
// now, until one admits it. Its error wraps errClusterSeen when one of
// them answered as a member of a cluster.
func (f *Former) eachJoinAddr(ctx context.Context, req *api.SecretJoinRequest) (*api.JoinResponse, error) {
	targets, rerr := resolveJoinAddrs(ctx, f.cfg.Settings.JoinAddrs, f.d.AdvertiseAddr())
	var errs []error
	seen := false
	for _, addr := range targets {
		resp, err := f.secretJoin(ctx, addr, req)
		if err == nil {
			return resp, nil
		}
		switch {
		case reason.Of(err) == reason.ClusterUninitialized, reason.Of(err) == reason.Unavailable,
			reason.Of(err) == "" && status.Code(err) == codes.Unavailable:
			// Nobody there, or nobody formed yet.
		default:
			seen = true
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, reason.Described(err)))
	}
	if rerr != nil {
		errs = append(errs, rerr)
	}
	if len(targets) == 0 && rerr == nil {
		errs = append(errs, errors.New("the join addresses resolve to no address but this node's own"))
	}
	if seen {
		errs = append(errs, errClusterSeen)
	}
	return nil, errors.Join(errs...)
}

// resolveJoinAddrs resolves every join address afresh (a service name may
// stand for several replicas, and their addresses change), leaving out
// self, this node's own advertise address.
func resolveJoinAddrs(ctx context.Context, joinAddrs []string, self string) ([]string, error) {
	var out []string
	var errs []error
	for _, hp := range joinAddrs {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			errs = append(errs, fmt.Errorf("resolve %s: %w", host, err))
			continue
		}
		for _, ip := range ips {
			if a := net.JoinHostPort(ip, port); a != self && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	// A different order each attempt: one hung replica does not hold up
	// every attempt at the same place.
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, errors.Join(errs...)
}

// bootstrapOrdinal initializes the cluster as `jaco cluster init` would
// and leaves the operator token in the data dir.
func (f *Former) bootstrapOrdinal(ctx context.Context) error {
	resp, err := f.Init(ctx, &api.InitClusterRequest{})
	if err != nil {
		return err
	}
	return f.SaveOperatorToken(resp.OperatorToken)
}
