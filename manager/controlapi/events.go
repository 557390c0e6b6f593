package controlapi

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/events"
	"github.com/jaco-project/jaco/manager/state/store"
)

// WithEventLog lets the server stream the events log holds and records
// (WatchEvents); without it WatchEvents is refused.
func WithEventLog(log *events.Log) Option { return func(s *Server) { s.events = log } }

// WatchEvents streams the changes this manager applies, from its own
// event log: it is served by any manager, never forwarded (local_read).
func (s *Server) WatchEvents(req *api.WatchEventsRequest, stream grpc.ServerStreamingServer[api.WatchEventsMessage]) error {
	if s.events == nil {
		return reason.Error(codes.Unavailable, reason.Unavailable, "this manager keeps no event log")
	}
	f, err := events.NewFilter(req, func(hostname string) (ids []string) {
		s.store.View(func(tx store.ReadTx) {
			if n := tx.FindNodeByHostname(hostname); n != nil {
				ids = append(ids, n.GetId())
			}
		})
		return ids
	})
	if err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "events filter: %v", err)
	}
	var since time.Time // zero: live events only
	if req.GetSince() != nil {
		since = req.GetSince().AsTime()
	}
	err = events.Stream(stream.Context(), s.events, since, f, stream.Send)
	switch {
	case errors.Is(err, events.ErrClosed):
		return reason.Error(codes.Unavailable, reason.Unavailable, "%v", err)
	case err != nil && stream.Context().Err() != nil:
		return stream.Context().Err() // the caller went: gRPC answers with its own status
	case err != nil:
		return fmt.Errorf("stream events: %w", err)
	}
	return nil
}
