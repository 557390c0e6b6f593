// Package events turns the changes a manager applies to its store into
// api.Events, keeps the recent ones in a bounded ring (Log) and streams
// them to `jaco events` callers, replaying from the ring first
// (docs/adr/0034-events.md). Every manager records its own: followers
// apply the same batches as the leader, so any manager can answer.
package events

import (
	"sync"
	"time"

	"github.com/jaco-project/jaco/api"
)

// The ring's bounds (docs/adr/0034-events.md): enough for an operator to
// look back over an incident of the last hour on a busy cluster, small
// enough (a few MB) to keep on every manager.
const (
	DefaultCapacity = 10000
	DefaultMaxAge   = time.Hour
)

// Log holds the most recent events in apply order, numbered by sequence
// without gaps, at most capacity of them and none older than maxAge. It
// is the one source streams read: a reader keeps the sequence of the last
// event it sent and asks for those after it, so replay and live events
// meet without a gap or a duplicate.
type Log struct {
	capacity int
	maxAge   time.Duration
	now      func() time.Time

	mu sync.Mutex
	// ring holds count events from start, the oldest first.
	ring  []*api.Event
	start int
	count int
	// last is the sequence of the newest event appended (0: none yet).
	last uint64
	// heldSince: every event applied at or after it is still held (the
	// Log's creation, or just after the newest event dropped).
	heldSince time.Time
	// changed is closed, and replaced, when events are appended or the
	// Log closes: readers waiting for news select on it.
	changed chan struct{}
	closed  bool
}

// NewLog returns an empty log holding at most capacity events, none
// older than maxAge; now is its clock (nil: time.Now).
func NewLog(capacity int, maxAge time.Duration, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	if capacity < 1 {
		capacity = 1
	}
	return &Log{capacity: capacity, maxAge: maxAge, now: now, ring: make([]*api.Event, capacity),
		heldSince: now(), changed: make(chan struct{})}
}

// Now is the log's clock, which stamps the events it is given.
func (l *Log) Now() time.Time { return l.now() }

// Append numbers evs and adds them, dropping the oldest beyond the
// bounds, and wakes the readers. The events are shared with readers from
// then on: nobody may change them.
func (l *Log) Append(evs ...*api.Event) {
	if len(evs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	for _, e := range evs {
		l.last++
		e.Sequence = l.last
		if l.count == l.capacity {
			l.dropOldest()
		}
		l.ring[(l.start+l.count)%l.capacity] = e
		l.count++
	}
	l.expire()
	close(l.changed)
	l.changed = make(chan struct{})
}

// Close wakes every reader for the last time; later Appends are ignored.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.changed)
	}
}

// Cursor is where a reader starts to get every held event applied at or
// after since (zero since: only events appended from now on): the
// sequence of the event before them. complete is false when events from
// then were dropped (or came before the log began); heldSince says from
// when the log is complete.
func (l *Log) Cursor(since time.Time) (cursor uint64, heldSince time.Time, complete bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	if since.IsZero() {
		return l.last, l.heldSince, true
	}
	cursor = l.last
	for i := l.count - 1; i >= 0; i-- {
		e := l.at(i)
		if e.GetTime().AsTime().Before(since) {
			break
		}
		cursor = e.Sequence - 1
	}
	return cursor, l.heldSince, !since.Before(l.heldSince)
}

// After returns up to max held events after sequence cursor, oldest
// first. missed counts the events after cursor that were dropped before
// they were read. When there is nothing after cursor, wait is closed once
// there is (or the log closes; closed then says so).
func (l *Log) After(cursor uint64, max int) (evs []*api.Event, missed uint64, wait <-chan struct{}, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	if l.closed {
		return nil, 0, nil, true
	}
	if cursor >= l.last {
		return nil, 0, l.changed, false
	}
	first := l.last - uint64(l.count) + 1 // sequence of the oldest held
	if cursor+1 < first {
		missed = first - cursor - 1
		cursor = first - 1
	}
	n := min(int(l.last-cursor), max)
	from := int(cursor + 1 - first)
	evs = make([]*api.Event, 0, n)
	for i := from; i < from+n; i++ {
		evs = append(evs, l.at(i))
	}
	return evs, missed, nil, false
}

// HeldSince is when the log became complete (see Cursor).
func (l *Log) HeldSince() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	return l.heldSince
}

// at is the i-th held event, 0 the oldest. Called with mu held.
func (l *Log) at(i int) *api.Event { return l.ring[(l.start+i)%l.capacity] }

// dropOldest drops the oldest held event. Called with mu held.
func (l *Log) dropOldest() {
	e := l.ring[l.start]
	l.ring[l.start] = nil
	l.start = (l.start + 1) % l.capacity
	l.count--
	// An event applied in the same nanosecond as the dropped one may be
	// gone too: held from just after it.
	if t := e.GetTime().AsTime().Add(time.Nanosecond); t.After(l.heldSince) {
		l.heldSince = t
	}
}

// expire drops the events older than maxAge. Called with mu held.
func (l *Log) expire() {
	if l.maxAge <= 0 {
		return
	}
	limit := l.now().Add(-l.maxAge)
	for l.count > 0 && l.at(0).GetTime().AsTime().Before(limit) {
		l.dropOldest()
	}
}

// RecentSince is the apply time of the nth newest held event (of the
// oldest when fewer are held), zero when none is: a stream from it starts
// with about the n newest events, so a page can show what happened last
// without the whole ring (events applied in that same instant come too).
func (l *Log) RecentSince(n int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	if l.count == 0 || n < 1 {
		return time.Time{}
	}
	return l.at(max(l.count-n, 0)).GetTime().AsTime()
}
