package raft

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
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
