package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/manager/state/store"
)

// Proposal limits. One raft entry should stay within what the raft node
// sends a follower in one append message (manager/state/raft maxSizePerMsg,
// 1 MiB) and far below etcd's WAL record limit (10 MB).
const (
	DefaultMaxTasksPerProposal = 5000
	DefaultMaxProposalBytes    = 1 << 20
	// maxInflightProposals is how many proposals of one batch wait for
	// raft at once.
	maxInflightProposals = 2
	// actionOverhead is a StoreAction's framing around a task, plus the
	// updated_at timestamp the store adds.
	actionOverhead = 32
)

// commit proposes writes in chunks, up to maxInflightProposals at a time (while
// one waits for its fsync and apply, the next is being encoded), and
// returns the error that stopped it, if any. A chunk refused with a
// version conflict is undone and its tasks are read again, to be decided
// in the next batch; a chunk that failed otherwise is undone, and the
// chunks not yet proposed by then are undone without being proposed.
func (s *Scheduler) commit(ctx context.Context, ix *index, writes []write) (proposals int, err error) {
	chunks := s.split(writes)
	results := make([]chunkResult, len(chunks))
	sem := make(chan struct{}, maxInflightProposals)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i, chunk := range chunks {
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			results[i].err = errNotProposed
			continue
		}
		proposals++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = s.propose(ctx, chunk)
			if results[i].err != nil && !errors.Is(results[i].err, store.ErrVersionConflict) {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	// The index belongs to this goroutine: outcomes are applied here.
	for i, r := range results {
		switch {
		case r.err == nil:
			s.reread(ix, r.stale)
		case errors.Is(r.err, store.ErrVersionConflict):
			// Another write got in between the check in propose and the
			// apply: the whole chunk was refused.
			s.reread(ix, chunks[i])
		default:
			s.undo(ix, chunks[i])
			if err == nil || errors.Is(err, errNotProposed) {
				err = r.err
			}
		}
	}
	return proposals, err
}

var errNotProposed = errors.New("not proposed after an earlier proposal failed")

// split cuts writes into chunks within the proposal limits.
func (s *Scheduler) split(writes []write) [][]write {
	var chunks [][]write
	for len(writes) > 0 {
		n, size := 0, 0
		for n < len(writes) && n < s.maxTasksPerProposal {
			sz := proto.Size(writes[n].task) + actionOverhead
			if n > 0 && size+sz > s.maxProposalBytes {
				break
			}
			size += sz
			n++
		}
		chunks = append(chunks, writes[:n])
		writes = writes[n:]
	}
	return chunks
}

type chunkResult struct {
	stale []write // skipped: changed or deleted since read
	err   error
}

// propose records chunk in one store transaction and proposes it. It
// touches no index state and may run beside other proposals.
func (s *Scheduler) propose(ctx context.Context, chunk []write) chunkResult {
	var r chunkResult
	recorded := 0
	err := s.st.Update(ctx, func(tx *store.Tx) error {
		for _, w := range chunk {
			// A volume recorded as living on the task's node goes first:
			// changed meanwhile (placed by an earlier proposal, removed),
			// the task is decided again instead.
			if stale, err := updateVolumes(tx, w); stale || err != nil {
				if err != nil {
					return err
				}
				r.stale = append(r.stale, w)
				continue
			}
			if err := tx.Update(w.task); err != nil {
				if errors.Is(err, store.ErrVersionConflict) || errors.Is(err, store.ErrNotFound) {
					r.stale = append(r.stale, w)
					continue
				}
				return fmt.Errorf("record task %s: %w", w.task.GetId(), err)
			}
			recorded++
		}
		return nil
	})
	if err != nil {
		r.err = fmt.Errorf("commit %d task writes: %w", recorded, err)
	}
	return r
}

// undo takes writes back: task objects get their old node and status, and
// tentative assignments leave the index. The tasks are pending again and
// decided in the next batch.
func (s *Scheduler) undo(ix *index, writes []write) {
	for i := len(writes) - 1; i >= 0; i-- {
		w := writes[i]
		id := w.task.GetId()
		w.task.NodeId, w.task.Status, w.task.Volumes = w.oldNodeID, w.oldStatus, w.oldTaskVolumes
		undoVolumes(ix, w)
		if w.prev != nil || ix.pending[id] == nil {
			ix.replace(id, ix.tasks[id], w.prev)
			if w.prev == nil {
				delete(ix.tasks, id)
			}
		}
		ix.pending[id] = w.task
		ix.fresh[id] = true
	}
}

// reread undoes writes and then reads their tasks from the store, which
// moved on without them.
func (s *Scheduler) reread(ix *index, writes []write) {
	if len(writes) == 0 {
		return
	}
	s.undo(ix, writes)
	s.st.View(func(tx store.ReadTx) {
		for _, w := range writes {
			rereadVolumes(ix, tx, w)
			id := w.task.GetId()
			if t := tx.GetTask(id); t != nil {
				ix.setTask(t)
			} else {
				ix.deleteTask(id, 0)
			}
		}
	})
}
