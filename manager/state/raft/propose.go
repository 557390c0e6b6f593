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
	data, err := proto.Marshal(&api.InternalRaftRequest{Id: id, Actions: actions})
	if err != nil {
		return fmt.Errorf("encode proposal: %w", err)
	}
	ch := n.wait.register(id)
	if err := n.rn.Propose(ctx, data); err != nil {
		n.wait.cancel(id)
		if errors.Is(err, raft.ErrProposalDropped) {
			return ErrNotLeader
		}
		if errors.Is(err, raft.ErrStopped) {
			return ErrStopped
		}
		return fmt.Errorf("propose: %w", err)
	}
	return n.await(ctx, id, ch)
}

// await waits for the outcome of proposal id.
func (n *Node) await(ctx context.Context, id uint64, ch <-chan error) error {
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		// The entry is in the log and may still be applied; we only stop
		// waiting for it.
		n.wait.cancel(id)
		return fmt.Errorf("stopped waiting for the write to apply (it may still commit): %w", ctx.Err())
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
		if errors.Is(err, raft.ErrProposalDropped) {
			return ErrNotLeader
		}
		return fmt.Errorf("propose conf change: %w", err)
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
func (n *Node) Barrier(ctx context.Context) error {
	return n.Propose(ctx, nil)
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
