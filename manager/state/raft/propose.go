package raft

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// proposalEncoding is deterministic: equal specs in an entry encode to
// equal bytes, which is how a replay finds the tasks that can share one
// (decodeAhead).
var proposalEncoding = proto.MarshalOptions{Deterministic: true}

// Propose commits actions as one batch and returns the store's verdict
// once the entry has been applied on this member. It implements the
// store's Proposer.
func (n *Node) Propose(ctx context.Context, actions []*api.StoreAction) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	id, err := newRequestID()
	if err != nil {
		return err
	}
	req := &api.InternalRaftRequest{Id: id, Actions: actions}
	data, err := proposalEncoding.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode proposal: %w", err)
	}
	ch := n.wait.register(id)
	n.proposed.add(req)
	defer n.proposed.forget(id) // still there unless its entry was applied
	if err := n.rn.Propose(ctx, data); err != nil {
		n.wait.cancel(id)
		err = proposeError("propose", err)
		n.metrics.countProposal(err)
		return err
	}
	err = n.await(ctx, id, ch)
	n.metrics.countProposal(err)
	return err
}

// proposeError classifies a failure of raft's Propose. ErrProposalDropped
// is raft refusing the entry (not leading, a leadership transfer under
// way): it was not appended, so ErrNotLeader. raft's other failures (it
// stopped, ctx ended) can come after it took the entry into its log, so
// the outcome is unknown.
func proposeError(what string, err error) error {
	switch {
	case errors.Is(err, raft.ErrProposalDropped):
		return ErrNotLeader
	case errors.Is(err, raft.ErrStopped):
		return fmt.Errorf("%s: %w", what, errStoppedWaiting)
	}
	return fmt.Errorf("%s: %w: %w", what, err, ErrOutcomeUnknown)
}

// await waits for the outcome of proposal id. Every failure here is
// ErrOutcomeUnknown: the entry is in the log, where a later leader may
// commit it.
func (n *Node) await(ctx context.Context, id uint64, ch <-chan error) error {
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		// We only stop waiting; the entry may still be applied.
		n.wait.cancel(id)
		return fmt.Errorf("stopped waiting for the write to commit (%w): %w", ctx.Err(), ErrOutcomeUnknown)
	}
}

// confChangeTimeout bounds the wait for a membership change. Unlike a
// store write, raft may drop a conf change without a word (a new leader
// still holding an unapplied one from its predecessor turns it into an
// empty entry), so a wait without a bound could last forever. Conf
// changes are safe to propose again.
const confChangeTimeout = 15 * time.Second

// ProposeConfChange commits one membership change and returns once it is
// applied on this member. Only the leader proposes them.
func (n *Node) ProposeConfChange(ctx context.Context, cc raftpb.ConfChange) error {
	n.confMu.Lock()
	defer n.confMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, confChangeTimeout)
	defer cancel()
	if !n.IsLeader() {
		return ErrNotLeader
	}
	id, err := newRequestID()
	if err != nil {
		return err
	}
	cc.ID = id
	ch := n.wait.register(id)
	if err := n.rn.ProposeConfChange(ctx, cc); err != nil {
		n.wait.cancel(id)
		return proposeError("propose conf change", err)
	}
	return n.await(ctx, id, ch)
}

// AddLearner adds m as a nonvoter: it receives the log but does not vote
// or count toward quorum until promoted.
func (n *Node) AddLearner(ctx context.Context, m *api.RaftMember) error {
	return n.proposeMember(ctx, raftpb.ConfChangeAddLearnerNode, m)
}

// Promote makes the learner raftID a voter.
func (n *Node) Promote(ctx context.Context, raftID uint64) error {
	m, ok := n.members.get(raftID)
	if !ok {
		return fmt.Errorf("promote %x: %w", raftID, ErrUnknownMember)
	}
	return n.proposeMember(ctx, raftpb.ConfChangeAddNode, m)
}

// Demote makes the voter raftID a learner.
func (n *Node) Demote(ctx context.Context, raftID uint64) error {
	m, ok := n.members.get(raftID)
	if !ok {
		return fmt.Errorf("demote %x: %w", raftID, ErrUnknownMember)
	}
	return n.proposeMember(ctx, raftpb.ConfChangeAddLearnerNode, m)
}

// UpdateMember rewrites a member's address: every member applies it to
// its member list and its transport, and the member keeps its raft id and
// suffrage.
func (n *Node) UpdateMember(ctx context.Context, m *api.RaftMember) error {
	if _, ok := n.members.get(m.RaftId); !ok {
		return fmt.Errorf("update %x: %w", m.RaftId, ErrUnknownMember)
	}
	return n.proposeMember(ctx, raftpb.ConfChangeUpdateNode, m)
}

// Remove takes raftID out of the group for good: its id joins the removed
// list (persisted, carried in snapshots) and its messages are refused.
func (n *Node) Remove(ctx context.Context, raftID uint64) error {
	return n.ProposeConfChange(ctx, raftpb.ConfChange{Type: raftpb.ConfChangeRemoveNode, NodeID: raftID})
}

func (n *Node) proposeMember(ctx context.Context, t raftpb.ConfChangeType, m *api.RaftMember) error {
	data, err := proto.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode member: %w", err)
	}
	return n.ProposeConfChange(ctx, raftpb.ConfChange{Type: t, NodeID: m.RaftId, Context: data})
}

// Barrier commits an empty batch and returns once it is applied: after
// it, every entry committed before the call is in the store. A new leader
// calls it before serving reads that must see all acknowledged writes.
// Its failures are never ErrOutcomeUnknown: an empty batch changes
// nothing, so all that matters is that this member could not confirm it
// leads (ErrNotLeader), or that ctx ended.
func (n *Node) Barrier(ctx context.Context) error {
	err := n.Propose(ctx, nil)
	switch {
	case !errors.Is(err, ErrOutcomeUnknown):
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("wait for a barrier to apply: %w", ctx.Err())
	}
	return fmt.Errorf("leadership changed or the member stopped before a barrier applied: %w", ErrNotLeader)
}

// newRequestID returns a random id. Waits are local to the proposing
// member, so ids need only not collide among its own pending proposals.
func newRequestID() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("read random request id: %w", err)
	}
	return binary.BigEndian.Uint64(b[:]), nil
}
