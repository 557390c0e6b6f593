package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// ErrClosed is returned by Stream when the log closes: the manager stops.
var ErrClosed = errors.New("the event log is closed: this manager is stopping")

// ErrUnknownType is a filter naming no object type events report.
var ErrUnknownType = errors.New("unknown event type")

// A message carries at most maxBatch events and about maxBatchBytes of
// them, far below gRPC's 4 MiB, and as many as are waiting: a burst of
// task writes goes out in few messages.
const (
	maxBatch      = 512
	maxBatchBytes = 1 << 20
)

// Filter is what a stream keeps of the events.
type Filter struct {
	types    map[string]bool
	services []string
	nodes    []string
	// nodeIDs are the ids of the nodes named by hostname when the stream
	// began, so tasks on them match.
	nodeIDs map[string]bool
}

// NewFilter checks req's filters. nodeIDs resolves a hostname to the ids
// of the nodes that have it now.
func NewFilter(req *api.WatchEventsRequest, nodeIDs func(hostname string) []string) (*Filter, error) {
	f := &Filter{services: req.GetServices(), nodes: req.GetNodes()}
	for _, t := range req.GetTypes() {
		if !slices.Contains(Types, t) {
			return nil, fmt.Errorf("%w %q: want one of %v", ErrUnknownType, t, Types)
		}
		if f.types == nil {
			f.types = map[string]bool{}
		}
		f.types[t] = true
	}
	if len(f.nodes) > 0 {
		f.nodeIDs = map[string]bool{}
		for _, n := range f.nodes {
			f.nodeIDs[n] = true // an id names itself
			for _, id := range nodeIDs(n) {
				f.nodeIDs[id] = true
			}
		}
	}
	return f, nil
}

// Match reports whether e passes the filter; a nil filter passes every
// event. A reset passes every filter: whoever watches anything must know
// the history has a hole.
func (f *Filter) Match(e *api.Event) bool {
	if f == nil || e.GetType() == TypeStore {
		return true
	}
	if f.types != nil && !f.types[e.GetType()] {
		return false
	}
	if len(f.services) > 0 && !slices.ContainsFunc(f.services, func(s string) bool {
		switch e.GetType() {
		case TypeService:
			return s == e.GetName() || s == e.GetId()
		case TypeTask:
			return s == e.GetServiceName() || s == e.GetServiceId()
		}
		return false
	}) {
		return false
	}
	if len(f.nodes) > 0 {
		switch e.GetType() {
		case TypeNode:
			return slices.Contains(f.nodes, e.GetName()) || f.nodeIDs[e.GetId()]
		case TypeTask:
			return f.nodeIDs[e.GetNodeId()]
		}
		return false
	}
	return true
}

// Stream sends the events of log that f matches (all when f is nil):
// first those applied at or after since (none when since is zero), then
// each one as it is applied, until ctx ends (its error is returned), the
// log closes (ErrClosed) or send fails. Where events are missing it sends
// a gap: since lies before what the log holds, or the caller read so
// slowly that the log dropped events it had not read yet.
func Stream(ctx context.Context, log *Log, since time.Time, f *Filter, send func(*api.WatchEventsMessage) error) error {
	cursor, heldSince, complete := log.Cursor(since)
	if !complete {
		gap := &api.EventsGap{HeldSince: timestamppb.New(heldSince), Message: fmt.Sprintf(
			"this manager holds events applied since %s only (it started then, or older events were dropped: it keeps %d, for %s at most)",
			heldSince.UTC().Format(time.RFC3339), log.capacity, log.maxAge)}
		if err := send(&api.WatchEventsMessage{Gap: gap}); err != nil {
			return err
		}
	}
	for {
		evs, missed, wait, closed := log.After(cursor, maxBatch)
		if closed {
			return ErrClosed
		}
		if missed > 0 {
			gap := &api.EventsGap{HeldSince: timestamppb.New(log.HeldSince()), Missed: missed, Message: fmt.Sprintf(
				"%d events were dropped before this stream read them: it read more slowly than the cluster changed", missed)}
			if err := send(&api.WatchEventsMessage{Gap: gap}); err != nil {
				return err
			}
		}
		if len(evs) == 0 {
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		msg, through := batch(evs, f)
		cursor = through
		if len(msg.Events) > 0 {
			if err := send(msg); err != nil {
				return err
			}
		}
	}
}

// batch is the events of evs that f keeps, up to about maxBatchBytes of
// them (one at least), and the sequence of the last event of evs it went
// through: the stream's next cursor.
func batch(evs []*api.Event, f *Filter) (msg *api.WatchEventsMessage, through uint64) {
	msg = &api.WatchEventsMessage{}
	size := 0
	for _, e := range evs {
		if f.Match(e) {
			n := proto.Size(e)
			if len(msg.Events) > 0 && size+n > maxBatchBytes {
				return msg, through
			}
			size += n
			msg.Events = append(msg.Events, e)
		}
		through = e.GetSequence()
	}
	return msg, through
}
