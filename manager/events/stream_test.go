package events

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

// streamTo runs Stream in a goroutine the test owns, handing each message
// over; the stream ends when the returned cancel is called.
func streamTo(t *testing.T, l *Log, since time.Time, f *Filter) (<-chan *api.WatchEventsMessage, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan *api.WatchEventsMessage, 100)
	done := make(chan error, 1)
	go func() {
		done <- Stream(ctx, l, since, f, func(m *api.WatchEventsMessage) error { out <- m; return nil })
	}()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return out, stop
}

// receiveNames collects event names from out until it has n, or fails.
func receiveNames(t *testing.T, out <-chan *api.WatchEventsMessage, n int) (got []string, gaps []*api.EventsGap) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case m := <-out:
			if m.GetGap() != nil {
				gaps = append(gaps, m.GetGap())
			}
			got = append(got, names(m.GetEvents())...)
		case <-timeout:
			t.Fatalf("received %v, want %d events", got, n)
		}
	}
	return got, gaps
}

// TestStreamReplaysThenFollows: events from since are replayed, then live
// ones follow, each once and in order.
func TestStreamReplaysThenFollows(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(100, time.Hour, c.now)
	c.t = c.t.Add(time.Minute)
	appendAt(l, c, "before")
	c.t = c.t.Add(time.Minute)
	appendAt(l, c, "a")
	appendAt(l, c, "b")
	out, stop := streamTo(t, l, c.t, &Filter{})
	got, gaps := receiveNames(t, out, 2)
	appendAt(l, c, "c")
	more, _ := receiveNames(t, out, 1)
	got = append(got, more...)
	if len(gaps) != 0 || len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("streamed %v with gaps %v, want [a b c] and no gap", got, gaps)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stream ended with %v, want the caller's cancellation", err)
	}
}

// TestStreamSaysWhenSinceIsBeforeTheLog: a since older than the log holds
// gets a gap first naming from when it holds, then what it holds.
func TestStreamSaysWhenSinceIsBeforeTheLog(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(2, time.Hour, c.now)
	for _, n := range []string{"a", "b", "c"} {
		c.t = c.t.Add(time.Second)
		appendAt(l, c, n)
	}
	out, _ := streamTo(t, l, t0, &Filter{})
	got, gaps := receiveNames(t, out, 2)
	if len(gaps) != 1 || gaps[0].GetMissed() != 0 || !gaps[0].GetHeldSince().AsTime().Equal(t0.Add(time.Second+time.Nanosecond)) {
		t.Fatalf("gaps %v, want one saying the log holds from just after a", gaps)
	}
	if len(got) != 2 || got[0] != "b" {
		t.Fatalf("streamed %v, want [b c]", got)
	}
}

func TestStreamEndsWhenTheLogCloses(t *testing.T) {
	l := NewLog(10, time.Hour, nil)
	done := make(chan error, 1)
	go func() {
		done <- Stream(context.Background(), l, time.Time{}, &Filter{}, func(*api.WatchEventsMessage) error { return nil })
	}()
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("stream ended with %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end when the log closed")
	}
}

func TestFilter(t *testing.T) {
	if _, err := NewFilter(&api.WatchEventsRequest{Types: []string{"plugin"}}, nil); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("type plugin: %v, want ErrUnknownType", err)
	}
	f, err := NewFilter(&api.WatchEventsRequest{Types: []string{"task", "node"}, Nodes: []string{"w1"}},
		func(h string) []string {
			if h == "w1" {
				return []string{"n1"}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		e    *api.Event
		want bool
	}{
		{&api.Event{Type: TypeTask, NodeId: "n1"}, true},
		{&api.Event{Type: TypeTask, NodeId: "n2"}, false},
		{&api.Event{Type: TypeNode, Name: "w1", Id: "n1"}, true},
		{&api.Event{Type: TypeService, Name: "web"}, false},
		{&api.Event{Type: TypeStore, Action: ActionReset}, true},
	} {
		if got := f.Match(c.e); got != c.want {
			t.Errorf("match %v = %v, want %v", c.e, got, c.want)
		}
	}
	f, _ = NewFilter(&api.WatchEventsRequest{Services: []string{"web"}}, nil)
	if !f.Match(&api.Event{Type: TypeTask, ServiceName: "web"}) || f.Match(&api.Event{Type: TypeService, Name: "db"}) ||
		f.Match(&api.Event{Type: TypeNode, Name: "web"}) {
		t.Error("service=web matches other than web and its tasks")
	}
}
