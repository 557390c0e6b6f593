package dispatcher

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"
)

// A change after a quiet spell is flushed at once; changes that come
// within the window of a flush wait for the window's end and go together,
// each newer one merged into the pending one of its key; an urgent change
// goes at once, taking what is pending with it.
func TestBatcherFlushesAtOnceThenBatches(t *testing.T) {
	const window = 2 * time.Second // "at once" cannot be mistaken for it
	type flush struct {
		at    time.Time
		items map[string]int
	}
	flushes := make(chan flush, 10)
	b := newBatcher(window, func(pending, newer int) int { return pending + newer },
		func(_ context.Context, items map[string]int) error {
			flushes <- flush{time.Now(), items}
			return nil
		}, func(v int) bool { return v >= 100 }) // 100 and more: urgent
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); b.run(ctx) }()
	defer func() { cancel(); <-stopped }()
	next := func() flush {
		t.Helper()
		select {
		case f := <-flushes:
			return f
		case <-time.After(5 * time.Second):
			t.Fatal("no flush within 5s")
			return flush{}
		}
	}

	start := time.Now()
	done := b.add(map[string]int{"a": 1})
	first := next()
	if took := first.at.Sub(start); took >= window || !maps.Equal(first.items, map[string]int{"a": 1}) {
		t.Fatalf("first flush %v after add, of %v; want a=1 at once", took, first.items)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	b.add(map[string]int{"b": 1})
	b.add(map[string]int{"b": 2, "c": 1})
	second := next()
	if gap := second.at.Sub(first.at); gap < window {
		t.Errorf("second flush %v after the first, want the window (%v)", gap, window)
	}
	if !maps.Equal(second.items, map[string]int{"b": 3, "c": 1}) {
		t.Errorf("second flush %v, want b=3 c=1 (merged, together)", slices.Sorted(maps.Keys(second.items)))
	}

	b.add(map[string]int{"d": 1})
	b.add(map[string]int{"e": 100})
	third := next()
	if gap := third.at.Sub(second.at); gap >= window {
		t.Errorf("an urgent change flushed %v after the flush before, want at once (< %v)", gap, window)
	}
	if !maps.Equal(third.items, map[string]int{"d": 1, "e": 100}) {
		t.Errorf("urgent flush %v, want d=1 e=100", third.items)
	}
}
