package storetest

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Proposer is a one-member raft stand-in implementing store.Proposer: each
// proposal becomes the next entry (request id = index), goes through the
// wire encoding, so an action that would not survive raft fails here too,
// and is applied to the store before Propose returns. Proposals are
// applied one at a time.
type Proposer struct {
	st *store.Store

	mu        sync.Mutex
	index     uint64
	proposals int
	hook      Hook
}

// Hook runs ahead of each proposal, with the proposer's lock held, standing
// in for other writers. commit applies actions as an entry of their own,
// committed before the proposal's. A non-nil error refuses the proposal:
// Propose returns it and applies nothing.
type Hook func(commit func(actions []*api.StoreAction) error) error

// Propose implements store.Proposer.
func (p *Proposer) Propose(_ context.Context, actions []*api.StoreAction) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proposals++
	if p.hook != nil {
		if err := p.hook(p.commitLocked); err != nil {
			return err
		}
	}
	return p.commitLocked(actions)
}

// Proposals is how many times Propose has been called, refused proposals
// included.
func (p *Proposer) Proposals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proposals
}

// SetHook makes h run ahead of every later proposal; nil removes it.
func (p *Proposer) SetHook(h Hook) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = h
}

func (p *Proposer) commitLocked(actions []*api.StoreAction) error {
	p.index++
	data, err := proto.Marshal(&api.InternalRaftRequest{Id: p.index, Actions: actions})
	if err != nil {
		return fmt.Errorf("encode entry %d: %w", p.index, err)
	}
	req := &api.InternalRaftRequest{}
	if err := proto.Unmarshal(data, req); err != nil {
		return fmt.Errorf("decode entry %d: %w", p.index, err)
	}
	return p.st.Apply(p.index, req)
}
