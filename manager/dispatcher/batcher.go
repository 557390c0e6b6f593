package dispatcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jaco-project/jaco/internal/pace"
	"github.com/jaco-project/jaco/manager/state/store"
)

// batcher gathers keyed changes from many callers and hands them to flush
// together, at most once per window, so that many nodes reporting at once cost
// few proposals. Each caller learns the outcome of the flush that took its
// changes.
type batcher[V any] struct {
	window time.Duration
	// merge combines a pending change with a newer one for the same key.
	merge func(pending, newer V) V
	flush func(ctx context.Context, items map[string]V) error
	// urgent, when set, marks a change someone waits for: it is flushed
	// without waiting for the window. Under load the flush in progress
	// is then what gathers the next batch (group commit).
	urgent func(V) bool
	kick   chan struct{}
	hurry  chan struct{} // an urgent change is pending (capacity 1)

	mu      sync.Mutex
	pending map[string]V
	waiters []chan error
	closed  bool
}

// newBatcher returns a batcher; urgent may be nil (no change is).
func newBatcher[V any](window time.Duration, merge func(pending, newer V) V,
	flush func(ctx context.Context, items map[string]V) error, urgent func(V) bool) *batcher[V] {
	return &batcher[V]{window: window, merge: merge, flush: flush, urgent: urgent,
		kick: make(chan struct{}, 1), hurry: make(chan struct{}, 1), pending: map[string]V{}}
}

// add queues items; the returned channel yields the flush's error once.
// After run has returned it yields no_leader at once.
func (b *batcher[V]) add(items map[string]V) <-chan error {
	done := make(chan error, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		done <- errNoLeader()
		return done
	}
	for k, v := range items {
		if old, ok := b.pending[k]; ok {
			v = b.merge(old, v)
		}
		b.pending[k] = v
	}
	b.waiters = append(b.waiters, done)
	for _, v := range items {
		if b.urgent != nil && b.urgent(v) {
			signal(b.hurry)
			break
		}
	}
	signal(b.kick)
	return done
}

// signal leaves a token in c (capacity 1) unless one is there.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run flushes until ctx ends, then fails whatever is still queued. A
// change after a quiet spell is flushed at once; while changes keep
// coming, at most one flush per window, so a burst costs few proposals,
// unless an urgent change is pending: that goes at once.
func (b *batcher[V]) run(ctx context.Context) {
	defer b.close()
	pacer := pace.New(b.window)
	timer := time.NewTimer(b.window)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		}
		timer.Reset(pacer.Delay())
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-b.hurry:
			timer.Stop()
		}
		// What is pending now goes: an urgent change among it needs no
		// further flush.
		select {
		case <-b.hurry:
		default:
		}
		pacer.Acted()
		b.mu.Lock()
		items, waiters := b.pending, b.waiters
		b.pending, b.waiters = map[string]V{}, nil
		b.mu.Unlock()
		var err error
		if len(items) > 0 {
			err = b.flush(ctx, items)
		}
		for _, w := range waiters {
			w <- err
		}
	}
}

func (b *batcher[V]) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, w := range b.waiters {
		w <- errNoLeader()
	}
	b.waiters, b.pending = nil, nil
}

// Proposal limits: one raft entry stays well under raft's 1 MiB message
// size, and a retried chunk re-reads a bounded set.
const (
	maxChunkBytes      = 512 << 10
	maxChunkObjects    = 1000
	maxConflictRetries = 10
)

// writeChunked calls write for every id, inside as few store.Update calls
// as the chunk limits allow. write records at most one object and returns
// its encoded size (0 when it recorded nothing). A chunk refused for a
// version conflict is read and written again.
func writeChunked(ctx context.Context, st *store.Store, ids []string, write func(tx *store.Tx, id string) int) error {
	for len(ids) > 0 {
		var n int
		err := st.UpdateRetrying(ctx, maxConflictRetries+1, func(tx *store.Tx) error {
			n = 0
			for size, count := 0, 0; n < len(ids) && size < maxChunkBytes && count < maxChunkObjects; n++ {
				if sz := write(tx, ids[n]); sz > 0 {
					size += sz
					count++
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("write %d objects: %w", n, err)
		}
		ids = ids[n:]
	}
	return nil
}
