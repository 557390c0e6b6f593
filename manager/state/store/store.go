package store

import (
	"sync"
	"sync/atomic"

	"github.com/docker/go-events"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/cowdb"
)

// Store is the replicated object store of a manager. See the package
// documentation for its contract.
type Store struct {
	// db is the latest published version of the content.
	db atomic.Pointer[cowdb.Version]
	// mu serializes Apply and Restore with the start of watches, so a
	// watcher begins between two batches, never inside one.
	mu      sync.Mutex
	applied atomic.Uint64
	// specs lets stored tasks share their spec (the store never changes
	// a stored object; reads and events are deep copies). Guarded by mu.
	specs *api.Specs
	// held is the transaction of the batches ApplyHeld applied since the
	// last Publish (nil when none), heldEvents their events and heldIndex
	// the last one's index. Guarded by mu.
	held       *cowdb.Version
	heldEvents []Event
	heldIndex  uint64

	proposerMu sync.Mutex
	proposer   Proposer

	broadcast *events.Broadcaster
	watchMu   sync.Mutex // guards closed and watchers.Add
	closed    bool
	done      chan struct{} // closed by Close: every watch ends
	watchers  sync.WaitGroup
	closeOnce sync.Once
}

// New returns an empty store whose Update proposes through p (which may be
// nil until SetProposer). Close releases it.
func New(p Proposer) *Store {
	s := &Store{
		specs:     api.NewSpecs(),
		proposer:  p,
		broadcast: events.NewBroadcaster(),
		done:      make(chan struct{}),
	}
	s.db.Store(cowdb.New(schema))
	return s
}

// SetProposer sets the proposer Update hands its actions to.
func (s *Store) SetProposer(p Proposer) {
	s.proposerMu.Lock()
	defer s.proposerMu.Unlock()
	s.proposer = p
}

func (s *Store) getProposer() Proposer {
	s.proposerMu.Lock()
	defer s.proposerMu.Unlock()
	return s.proposer
}

// View calls fn with a read view of the latest applied state. The view does
// not change while fn runs, and never shows part of a batch.
func (s *Store) View(fn func(tx ReadTx)) {
	fn(readTx{txn: s.db.Load()})
}

// ViewWithIndex is View with the AppliedIndex of the state fn reads, read
// as one: the view holds every batch up to index and none after it, so a
// watcher that got the events of later batches elsewhere (events carry
// their index) can tell which of them the view already holds.
func (s *Store) ViewWithIndex(fn func(tx ReadTx, index uint64)) {
	s.mu.Lock()
	v, index := s.db.Load(), s.applied.Load()
	s.mu.Unlock()
	fn(readTx{txn: v}, index)
}

// AppliedIndex is the index of the last entry given to Apply (refused or
// not) or to Restore.
func (s *Store) AppliedIndex() uint64 {
	return s.applied.Load()
}

// Close ends every watch, waits for their goroutines and stops the event
// broadcaster. The content stays readable; Apply still works but publishes
// to no one.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.watchMu.Lock()
		s.closed = true
		close(s.done)
		s.watchMu.Unlock()
		s.watchers.Wait()
		_ = s.broadcast.Close() // never fails
	})
}
