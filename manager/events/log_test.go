package events

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// testClock is a clock tests move by hand.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// appendAt appends an event named name stamped with the clock's time.
func appendAt(l *Log, c *testClock, name string) {
	l.Append(&api.Event{Time: timestamppb.New(c.t), Type: TypeService, Action: ActionCreate, Name: name})
}

func names(evs []*api.Event) (out []string) {
	for _, e := range evs {
		out = append(out, e.GetName())
	}
	return out
}

func TestLogNumbersEventsAndDropsBeyondCapacity(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(3, time.Hour, c.now)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		c.t = c.t.Add(time.Second)
		appendAt(l, c, n)
	}
	evs, missed, _, _ := l.After(0, 100)
	if got := names(evs); len(got) != 3 || got[0] != "c" || got[2] != "e" {
		t.Fatalf("held %v, want the newest three c d e", got)
	}
	if missed != 2 {
		t.Fatalf("a reader from the start missed %d, want 2 (a and b dropped)", missed)
	}
	if evs[0].GetSequence() != 3 || evs[2].GetSequence() != 5 {
		t.Fatalf("sequences %d..%d, want 3..5", evs[0].GetSequence(), evs[2].GetSequence())
	}
	// Held from just after b, the newest dropped.
	if want := t0.Add(2*time.Second + time.Nanosecond); !l.HeldSince().Equal(want) {
		t.Fatalf("held since %v, want %v", l.HeldSince(), want)
	}
	evs, missed, _, _ = l.After(4, 100)
	if got := names(evs); len(got) != 1 || got[0] != "e" || missed != 0 {
		t.Fatalf("after 4: %v (missed %d), want [e] and none missed", got, missed)
	}
	if evs, _, _, _ := l.After(3, 1); len(evs) != 1 || evs[0].GetName() != "d" {
		t.Fatalf("after 3, at most 1: %v, want [d]", names(evs))
	}
}

func TestLogExpiresOldEvents(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(100, time.Hour, c.now)
	appendAt(l, c, "old")
	c.t = c.t.Add(30 * time.Minute)
	appendAt(l, c, "new")
	c.t = c.t.Add(31 * time.Minute) // "old" is now 61 minutes old
	evs, missed, _, _ := l.After(0, 100)
	if got := names(evs); len(got) != 1 || got[0] != "new" || missed != 1 {
		t.Fatalf("held %v (missed %d), want [new] with old expired", got, missed)
	}
}

func TestLogCursorSince(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(100, time.Hour, c.now)
	for _, n := range []string{"a", "b", "c"} {
		c.t = c.t.Add(time.Minute)
		appendAt(l, c, n)
	}
	cur, _, complete := l.Cursor(t0.Add(2 * time.Minute)) // b's time: b and c
	evs, _, _, _ := l.After(cur, 100)
	if got := names(evs); !complete || len(got) != 2 || got[0] != "b" {
		t.Fatalf("since b's time: %v (complete %v), want [b c], complete", got, complete)
	}
	cur, _, _ = l.Cursor(time.Time{}) // live only
	if evs, _, wait, _ := l.After(cur, 100); len(evs) != 0 || wait == nil {
		t.Fatalf("live cursor sees %v, want nothing and a wait", names(evs))
	}
	_, held, complete := l.Cursor(t0.Add(-time.Minute)) // before the log began
	if complete || !held.Equal(t0) {
		t.Fatalf("since before the log began: complete %v, held since %v; want incomplete, held since %v", complete, held, t0)
	}
}

func TestLogWakesWaitersAndCloses(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(10, time.Hour, c.now)
	_, _, wait, _ := l.After(0, 10)
	select {
	case <-wait:
		t.Fatal("wait closed before anything was appended")
	default:
	}
	appendAt(l, c, "a")
	<-wait // closed by the append, or the test times out
	l.Close()
	if _, _, _, closed := l.After(1, 10); !closed {
		t.Fatal("After on a closed log does not say closed")
	}
	appendAt(l, c, "late") // ignored, no panic on the closed channel
}

func TestLogRecentSince(t *testing.T) {
	c := &testClock{t: t0}
	l := NewLog(100, time.Hour, c.now)
	if got := l.RecentSince(2); !got.IsZero() {
		t.Fatalf("RecentSince on an empty log = %v, want zero", got)
	}
	for _, name := range []string{"a", "b", "c"} {
		appendAt(l, c, name)
		c.t = c.t.Add(time.Second)
	}
	cursor, _, _ := l.Cursor(l.RecentSince(2))
	evs, _, _, _ := l.After(cursor, 100)
	if got := names(evs); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Fatalf("from RecentSince(2): %v, want [b c]", got)
	}
	if got := l.RecentSince(10); !got.Equal(t0) {
		t.Fatalf("RecentSince(10) with 3 held = %v, want the oldest, %v", got, t0)
	}
}
