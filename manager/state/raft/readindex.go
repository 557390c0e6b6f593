package raft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
)

// readIndexRetry is how long a read index request waits for its answer
// before it is sent again: raft drops one that finds no leader, and a
// leader that was deposed without knowing it never has it confirmed.
const readIndexRetry = 300 * time.Millisecond

// ReadBarrier returns once this member's applier holds everything the
// group had committed when it was called, as confirmed by a quorum: a read
// served after it is linearizable (docs/design.md §7). The leader checks
// with a quorum that it still leads (raft's ReadIndex, ReadOnlySafe); a
// follower asks the leader for that index. Then it waits until this
// member has applied up to the index. A member cut off from the quorum
// waits until ctx ends.
func (n *Node) ReadBarrier(ctx context.Context) error {
	id := n.readSeq.Add(1)
	rctx := binary.BigEndian.AppendUint64(nil, id)
	answer := n.readIndexes.register(id)
	defer n.readIndexes.cancel(id)
	retry := time.NewTicker(readIndexRetry)
	defer retry.Stop()
	for {
		if err := n.rn.ReadIndex(ctx, rctx); err != nil {
			if errors.Is(err, raft.ErrStopped) {
				return ErrStopped
			}
			return fmt.Errorf("read index: %w", err)
		}
		select {
		case index := <-answer:
			return n.waitApplied(ctx, index)
		case <-retry.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return ErrStopped
		}
	}
}

// waitApplied returns once the applier holds index.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	reached := n.appliedWaits.register(index)
	defer n.appliedWaits.cancel(index, reached)
	// Registered first, checked second: release stores the applied index
	// before it wakes anyone, so no wakeup falls in between.
	if n.applied.Load() >= index {
		return nil
	}
	select {
	case <-reached:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// deliverReadStates hands each answered read index request its index.
// Called from the Ready loop.
func (n *Node) deliverReadStates(states []raft.ReadState) {
	for _, rs := range states {
		if len(rs.RequestCtx) == 8 {
			n.readIndexes.trigger(binary.BigEndian.Uint64(rs.RequestCtx), rs.Index)
		}
	}
}

// appliedWaits wakes the reads waiting for the applier to reach an index.
type appliedWaits struct {
	mu sync.Mutex
	m  map[uint64][]chan struct{}
}

func (w *appliedWaits) register(index uint64) chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[uint64][]chan struct{})
	}
	w.m[index] = append(w.m[index], ch)
	return ch
}

// release wakes every wait for an index up to applied.
func (w *appliedWaits) release(applied uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for index, chs := range w.m {
		if index <= applied {
			for _, ch := range chs {
				close(ch)
			}
			delete(w.m, index)
		}
	}
}

func (w *appliedWaits) cancel(index uint64, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	chs := w.m[index]
	for i, c := range chs {
		if c == ch {
			w.m[index] = append(chs[:i], chs[i+1:]...)
			break
		}
	}
	if len(w.m[index]) == 0 {
		delete(w.m, index)
	}
}
