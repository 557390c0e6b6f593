package monitor

import (
	"sync"
	"time"
)

// forgetAfter is how long a node that stopped heartbeating stays in the
// table: far longer than any question about it, short enough that the
// table does not grow with every node that ever monitored through here.
const forgetAfter = 10 * time.Minute

// Table records when each node last heartbeated to this one. Safe for
// concurrent use.
type Table struct {
	now func() time.Time

	mu    sync.Mutex
	heard map[string]time.Time
}

// NewTable returns an empty table on the clock now (time.Now if nil).
func NewTable(now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	return &Table{now: now, heard: map[string]time.Time{}}
}

// Heard records a heartbeat of node now.
func (t *Table) Heard(node string) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.heard[node] = now
	for id, at := range t.heard {
		if now.Sub(at) > forgetAfter {
			delete(t.heard, id)
		}
	}
}

// LastHeard is how long ago node last heartbeated; ok is false when it
// has not within forgetAfter.
func (t *Table) LastHeard(node string) (ago time.Duration, ok bool) {
	now := t.now()
	t.mu.Lock()
	at, ok := t.heard[node]
	t.mu.Unlock()
	if !ok || now.Sub(at) > forgetAfter {
		return 0, false
	}
	return max(now.Sub(at), 0), true
}
