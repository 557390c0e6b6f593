package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/events"
)

// RecentEvents is how many of the newest events a page gets when its
// stream opens, before the live ones.
const RecentEvents = 50

// Event is one event as the page shows it.
type Event struct {
	Time     time.Time `json:"time"`
	Sequence uint64    `json:"sequence"`
	Type     string    `json:"type"`
	Action   string    `json:"action"`
	Name     string    `json:"name"`
	From     string    `json:"from,omitempty"`
	To       string    `json:"to,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
}

func eventOf(e *api.Event) Event {
	return Event{Time: e.GetTime().AsTime(), Sequence: e.GetSequence(), Type: e.GetType(), Action: e.GetAction(),
		Name: e.GetName(), From: e.GetFrom(), To: e.GetTo(), Reason: e.GetReason(), Message: e.GetMessage()}
}

// events streams the manager's event log as server-sent events, the
// source `jaco events` reads: first "hello" (the page starts its list
// afresh: a reconnected stream replays), then "events" with batches of
// events, oldest first, the newest RecentEvents held ones first of all,
// and "gap" where events are missing. It ends when the browser goes, the
// dashboard stops, or the manager stops (its log closes); the browser's
// EventSource then reconnects, to the next manager this daemon runs.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	src := s.source(w, r)
	if src == nil {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "this connection cannot stream")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(kind string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", kind, err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, data); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	}
	if send("hello", struct{}{}) != nil {
		return
	}
	log := src.EventLog()
	err := events.Stream(r.Context(), log, log.RecentSince(RecentEvents), nil, func(msg *api.WatchEventsMessage) error {
		if g := msg.GetGap(); g != nil {
			return send("gap", map[string]any{"missed": g.GetMissed(), "message": g.GetMessage()})
		}
		batch := make([]Event, 0, len(msg.GetEvents()))
		for _, e := range msg.GetEvents() {
			batch = append(batch, eventOf(e))
		}
		return send("events", batch)
	})
	if err != nil && !errors.Is(err, events.ErrClosed) && r.Context().Err() == nil {
		s.cfg.Logger.Debug("dashboard event stream ended", "err", err)
	}
}
