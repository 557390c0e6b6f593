package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// A manager restarted with a new --advertise-addr (docs/adr/0038) still
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
// address until ctx ends.
func (n *Node) runAddressLoop(ctx context.Context) {
	if n.cfg.Bootstrap {
		return // the join reconciler (formation_ordinal.go) moves it
	}
	kick := make(chan struct{}, 1)
	kick <- struct{}{} // check at once: a restart is when addresses change
	var asked string   // the move last announced in the log, said once
	n.runLoop(ctx, loop{interval: n.cfg.RoleCheckInterval, kick: kick,
		failMsg: "this manager's address changed and the cluster has not recorded the new one yet; retrying",
		step:    func(ctx context.Context) error { return n.checkAddress(ctx, &asked) }})
}

// checkAddress compares the address this manager's own raft state and
// store record for it with its advertise address, and asks the leader to
// move it when they differ. asked is the move it last logged.
func (n *Node) checkAddress(ctx context.Context, asked *string) error {
	m := n.Manager()
	if m == nil || n.State() != api.NodeState_NODE_STATE_READY {
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
	recorded := members[i].Address
	if recorded == n.advertise && (node == nil || node.Address == n.advertise) {
		return nil
	}
	if node != nil && recorded == n.advertise {
		recorded = node.Address
	}
	if move := recorded + " " + n.advertise; *asked != move {
		*asked = move
		n.log.Info("this manager's advertise address changed; asking the leader to record it", "from", recorded, "to", n.advertise)
	}
	resp, err := n.callUpdateAddress(ctx)
	if err != nil {
		return err
	}
	// The next round finds the change applied here too, or asks again:
	// asking for the address already recorded changes nothing.
	n.log.Info("the cluster recorded this manager's new address; peers redial it", "address", n.advertise, "members", len(resp.Members))
	return nil
}

// callUpdateAddress asks the managers in turn, the other ones first
// (renewTargets), until one answers: any of them forwards to the leader.
// A refusal (address_in_use, node_removed, invalid_spec) is final for
// this round and logged as the operator must read it.
func (n *Node) callUpdateAddress(ctx context.Context) (*api.UpdateAddressResponse, error) {
	var errs []error
	for _, addr := range n.renewTargets() {
		conn, err := n.managerConns.Get(addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, updateAddressTimeout)
		resp, err := api.NewMembershipServiceClient(conn).UpdateAddress(cctx, &api.UpdateAddressRequest{Address: n.advertise})
		cancel()
		if err == nil {
			return resp, nil
		}
		if refusedMove(err) {
			return nil, fmt.Errorf("move to %s: %w", n.advertise, reason.Described(err))
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
		n.advertise, errors.Join(errs...))
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
