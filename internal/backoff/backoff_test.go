package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelayDoublesWithinItsCap(t *testing.T) {
	lo, hi := 100*time.Millisecond, 2*time.Second
	for failures, full := range []time.Duration{lo, 2 * lo, 4 * lo, 8 * lo, 16 * lo, hi, hi} {
		for range 50 {
			if d := Delay(lo, hi, failures); d < full/2 || d > full {
				t.Fatalf("Delay after %d failures = %v, want within [%v, %v]", failures, d, full/2, full)
			}
		}
	}
	if d := Delay(lo, hi, 1000); d < hi/2 || d > hi {
		t.Fatalf("Delay after 1000 failures = %v, want capped at %v", d, hi)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep of a done context waited")
	}
	if !Sleep(t.Context(), time.Millisecond) {
		t.Fatal("Sleep did not finish its wait")
	}
}
