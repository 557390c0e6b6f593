package dispatcher

import (
	"slices"
	"testing"
	"time"
)

func TestExpiry(t *testing.T) {
	base := time.Unix(100, 0)
	e := newExpiry()
	e.touch("a", base.Add(15*time.Second))
	e.touch("b", base.Add(10*time.Second))
	e.touch("c", base.Add(20*time.Second))

	if got := e.expired(base.Add(9 * time.Second)); len(got) != 0 {
		t.Fatalf("expired before any deadline: %v", got)
	}
	// A heartbeat moves a's deadline past the next check.
	e.touch("a", base.Add(25*time.Second))
	if got := e.expired(base.Add(20 * time.Second)); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("expired at +20s = %v, want [b c] (a deadline is inclusive, b and c sorted)", got)
	}
	if got := e.expired(base.Add(20 * time.Second)); len(got) != 0 {
		t.Fatalf("expired nodes reported twice: %v", got)
	}
	e.forget("a")
	if got := e.expired(base.Add(time.Hour)); len(got) != 0 || e.tracked("a") {
		t.Fatalf("forgotten node expired: %v", got)
	}
}
