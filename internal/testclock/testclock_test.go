package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestAdvanceMovesOnlyByWhatWasAsked(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("new clock reads %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance(90s) clock reads %v, want %v", got, want)
	}
}

func TestConcurrentAdvancesAllCount(t *testing.T) {
	start := time.Unix(0, 0)
	c := New(start)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(800*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after 800 concurrent 1ms advances clock reads %v, want %v", got, want)
	}
}
