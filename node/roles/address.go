package roles

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/node/internal/reconcile"
)

// A manager restarted with a new --advertise-addr
// (docs/adr/0038-manager-address-change.md) still
// has its raft member, and its Node, at the old address: peers would go on
// sending it raft messages there. The address loop notices that from its
// own raft state and asks the leader (MembershipService.UpdateAddress,
// with its manager certificate, through the other managers, whose
// addresses it still knows) to move it. The leader commits a conf change
// that every member, this one included, applies; peers redial. The loop
// keeps checking, cheaply and locally, so the same holds after an unlock
// or a promotion. Ordinal formation's join reconciler does the same
// through its own admission path, so this loop stays out of its way.

// runAddressLoop keeps this manager's recorded address its advertise
// address until ctx ends. Ordinal formation's join reconciler moves it
// instead (Config.NoAddressLoop): Run does not call this then.
func (p *Poller) runAddressLoop(ctx context.Context) {
	kick := make(chan struct{}, 1)
	kick <- struct{}{} // check at once: a restart is when addresses change
	var asked string   // the move last announced in the log, said once
	reconcile.Loop{Interval: p.cfg.Interval, Kick: kick, Logger: p.log,
		FailMsg: "this manager's address changed and the cluster has not recorded the new one yet; retrying",
		Step:    func(ctx context.Context) error { return p.checkAddress(ctx, &asked) }}.Run(ctx)
}

// checkAddress compares the address this manager's own raft state and
// store record for it with its advertise address, and asks the leader to
// move it when they differ. asked is the move it last logged.
func (p *Poller) checkAddress(ctx context.Context, asked *string) error {
	m := p.d.Manager()
	if m == nil || p.d.State() != api.NodeState_NODE_STATE_READY {
		return nil // a worker, or a locked manager: nothing to move now
	}
	if !m.Replayed() {
		return nil // its log still holds what it recorded before the stop
	}
	members := m.RaftMembers()
	i := slices.IndexFunc(members, func(mem *api.RaftMember) bool { return mem.RaftId == m.RaftID() })
	if i < 0 {
		return nil // not in its own configuration yet: the log is on its way
	}
	node := m.Node(m.NodeID())
	recorded, advertise := members[i].Address, p.d.AdvertiseAddr()
	if recorded == advertise && (node == nil || node.Address == advertise) {
		return nil
	}
	if node != nil && recorded == advertise {
		recorded = node.Address
	}
	if move := recorded + " " + advertise; *asked != move {
		*asked = move
		p.log.Info("this manager's advertise address changed; asking the leader to record it", "from", recorded, "to", advertise)
	}
	resp, err := p.callUpdateAddress(ctx, advertise)
	if err != nil {
		return err
	}
	// The next round finds the change applied here too, or asks again:
	// asking for the address already recorded changes nothing.
	p.log.Info("the cluster recorded this manager's new address; peers redial it", "address", advertise, "members", len(resp.Members))
	return nil
}

// callUpdateAddress asks the managers in turn, the other ones first
// (renewTargets), to record advertise as this manager's address, until
// one answers: any of them forwards to the leader.
// A refusal (address_in_use, node_removed, invalid_spec) is final for
// this round and logged as the operator must read it.
func (p *Poller) callUpdateAddress(ctx context.Context, advertise string) (*api.UpdateAddressResponse, error) {
	var errs []error
	for _, addr := range p.renewTargets() {
		conn, err := p.conns.Get(addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, updateAddressTimeout)
		resp, err := api.NewMembershipServiceClient(conn).UpdateAddress(cctx, &api.UpdateAddressRequest{Address: advertise})
		cancel()
		if err == nil {
			return resp, nil
		}
		if refusedMove(err) {
			return nil, fmt.Errorf("move to %s: %w", advertise, reason.Described(err))
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, reason.Described(err)))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("no manager address known")
	}
	return nil, fmt.Errorf("ask the leader to record %s (no quorum while a majority of managers is at addresses the others do not know yet? see the operator guide, \"Moving a manager to a new address\"): %w",
		advertise, errors.Join(errs...))
}

// updateAddressTimeout bounds one UpdateAddress call: a raft conf change
// is given 15 s by the leader (raft.confChangeTimeout), plus forwarding.
const updateAddressTimeout = 20 * time.Second

// refusedMove reports whether the leader refused the move itself, rather
// than not being reachable: asking another manager changes nothing.
func refusedMove(err error) bool {
	switch reason.Of(err) {
	case reason.AddressInUse, reason.NodeRemoved, reason.InvalidSpec, reason.NotAManager, reason.PermissionDenied:
		return true
	}
	return false
}
