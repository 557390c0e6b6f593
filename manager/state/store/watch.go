package store

import (
	"context"

	"github.com/docker/go-events"
	"google.golang.org/protobuf/proto"
)

// EventKind says what an Event reports.
type EventKind int

// The kinds of event.
const (
	EventCreate EventKind = iota + 1
	EventUpdate
	EventDelete
	// EventReset reports that Restore replaced the whole content. It has no
	// object and passes every filter: a watcher that keeps a view of the
	// store must read it again.
	EventReset
)

func (k EventKind) String() string {
	switch k {
	case EventCreate:
		return "create"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	case EventReset:
		return "reset"
	}
	return "unknown"
}

// Event is one applied change. A watcher gets its own copies of the
// objects.
type Event struct {
	Kind EventKind
	// Object is the object as written, or as it was before a delete.
	Object Object
	// Old is the object before an update; nil for other kinds.
	Old Object
	// Index is the raft index of the entry that made the change.
	Index uint64
}

// Filter selects the events a watcher receives. Filters run on the
// broadcaster's goroutine, on objects shared with the store: they must be
// quick and must not modify the event.
type Filter func(Event) bool

// ByKind matches events of the given kinds.
func ByKind(kinds ...EventKind) Filter {
	return func(e Event) bool {
		for _, k := range kinds {
			if e.Kind == k {
				return true
			}
		}
		return false
	}
}

// ObjectType matches events about objects of type T, e.g.
// ObjectType[*api.Task]().
func ObjectType[T Object]() Filter {
	return func(e Event) bool {
		_, ok := e.Object.(T)
		return ok
	}
}

// Any matches events that match at least one of filters.
func Any(filters ...Filter) Filter {
	return func(e Event) bool {
		for _, f := range filters {
			if f(e) {
				return true
			}
		}
		return false
	}
}

// Watch returns the events of every batch applied from now on that match
// all filters, in apply order. The channel is closed when ctx is done or
// the store is closed. The caller must keep receiving: events queue without
// bound until it does.
func (s *Store) Watch(ctx context.Context, filters ...Filter) <-chan Event {
	return s.ViewAndWatch(ctx, func(ReadTx) {}, filters...)
}

// ViewAndWatch calls fn with a read view of the latest applied state and
// returns the events, as Watch does, of exactly the batches applied after
// that state: none is missed and none is already in the view.
func (s *Store) ViewAndWatch(ctx context.Context, fn func(tx ReadTx), filters ...Filter) <-chan Event {
	s.mu.Lock()
	view := readTx{txn: s.db.Load()}
	out := s.watch(ctx, filters)
	s.mu.Unlock()
	fn(view)
	return out
}

// watch registers a watcher with the broadcaster: broadcaster → filter →
// unbounded queue → channel, and a goroutine forwarding from that channel
// to the returned one.
func (s *Store) watch(ctx context.Context, filters []Filter) <-chan Event {
	out := make(chan Event)
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.closed {
		close(out)
		return out
	}
	ch := events.NewChannel(0)
	sink := events.Sink(events.NewQueue(ch))
	if len(filters) > 0 {
		sink = events.NewFilter(sink, events.MatcherFunc(func(e events.Event) bool {
			return matches(e.(Event), filters)
		}))
	}
	if err := s.broadcast.Add(sink); err != nil { // only once closed, excluded above
		_ = sink.Close()
		close(out)
		return out
	}
	s.watchers.Add(1)
	go s.forward(ctx, sink, ch, out)
	return out
}

func matches(e Event, filters []Filter) bool {
	if e.Kind == EventReset {
		return true
	}
	for _, f := range filters {
		if !f(e) {
			return false
		}
	}
	return true
}

// forward copies events from ch to out until ctx is done or the store is
// closed, then unregisters the watcher and stops its queue.
func (s *Store) forward(ctx context.Context, sink events.Sink, ch *events.Channel, out chan<- Event) {
	defer s.watchers.Done()
	defer close(out)
	defer func() {
		_ = s.broadcast.Remove(sink)
		_ = ch.Close()   // fails the queue's pending and remaining writes
		_ = sink.Close() // waits for the queue to drain and stop
	}()
	for {
		select {
		case raw := <-ch.C:
			e := raw.(Event)
			e.Object, e.Old = clone(e.Object), clone(e.Old)
			select {
			case out <- e:
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}

// publish hands the events of one applied batch to the broadcaster, in
// order. Called with s.mu held.
func (s *Store) publish(evs ...Event) {
	for _, e := range evs {
		_ = s.broadcast.Write(e) // fails only after Close, when no one watches
	}
}

func clone(obj Object) Object {
	if obj == nil {
		return nil
	}
	return proto.Clone(obj).(Object)
}
